#include "collectives/twins/alltoall_twin_kernel.h"

#include "collectives/twins/alltoall_twin.h"
#include "collectives/twins/bounded_wait.h"
#include "collectives/twins/twin_steps.h"

namespace ncclscope::collectives {

void RunAlltoAllTwinKernel(const AlltoAllKernelArgs& args, uint32_t blocks,
                           uint32_t threads) noexcept {
  if (!PlausibleLaunch(args.rank, args.nranks, blocks, threads)) return;
  AlltoAllPlan plan;
  plan.algorithm = Algorithm::kPull;
  plan.packs_per_peer = args.packs_per_peer;
  plan.bytes = args.packs_per_peer * kPackBytes * static_cast<size_t>(args.nranks);
  plan.copy_in = args.copy_in != 0;
  plan.blocks = blocks;
  plan.threads = threads;
  // The kernel copies into args.staging and reads every rank's input through source[]: peers'
  // staging buffers when copying in (its own included), their sendbuffs otherwise.
  AlltoAllPeerMemory mem{};
  AlltoAllTwinCall call;
  call.plan = &plan;
  call.rank = args.rank;
  call.nranks = args.nranks;
  call.epoch = args.epoch;
  call.input = args.input;
  call.output = args.output;
  call.deadline_ns = MonotonicNs() + static_cast<int64_t>(args.timeout_ns);
  for (int q = 0; q < args.nranks; ++q) {
    mem.staging[q] = const_cast<unsigned char*>(args.source[q]);
    mem.signal[q] = args.signal[q];
    call.peer_input[q] = args.source[q];
  }
  Stall stall;
  if (RunAlltoAllTwin(call, mem, &stall) || args.stall == nullptr) return;
  RecordKernelStall(args.stall, stall);
}

}  // namespace ncclscope::collectives
