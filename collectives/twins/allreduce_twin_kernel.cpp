#include "collectives/twins/allreduce_twin_kernel.h"

#include "collectives/twins/allreduce_twin.h"
#include "collectives/twins/bounded_wait.h"
#include "collectives/twins/twin_steps.h"

namespace ncclscope::collectives {

void RunAllReduceTwinKernel(Algorithm algorithm, Dtype dtype, const AllReduceKernelArgs& args,
                            uint32_t blocks, uint32_t threads) noexcept {
  if (!PlausibleLaunch(args.rank, args.nranks, blocks, threads)) return;
  AllReducePlan plan;
  plan.algorithm = algorithm;
  plan.dtype = dtype;
  plan.packs = args.packs;
  plan.bytes = args.packs * kPackBytes;
  plan.copy_in = args.copy_in != 0;
  plan.blocks = blocks;
  plan.threads = threads;
  // The kernel reads every rank's input through source[]: peers' staging buffers when copying in
  // (its own included, which it fills), their sendbuffs otherwise.
  PeerMemory mem{};
  TwinCall call;
  call.plan = &plan;
  call.rank = args.rank;
  call.nranks = args.nranks;
  call.epoch = args.epoch;
  call.input = args.input;
  call.output = args.output;
  call.deadline_ns = MonotonicNs() + static_cast<int64_t>(args.timeout_ns);
  for (int q = 0; q < args.nranks; ++q) {
    mem.staging[q] = const_cast<unsigned char*>(args.source[q]);
    mem.scratch[q] = args.scratch[q];
    mem.signal[q] = args.signal[q];
    call.peer_input[q] = args.source[q];
  }
  Stall stall;
  if (RunAllReduceTwin(call, mem, &stall) || args.stall == nullptr) return;
  RecordKernelStall(args.stall, stall);
}

}  // namespace ncclscope::collectives
