#include "collectives/gpu_check/twin_reference.h"
#include "collectives/gpu_check/run_limits.h"

#include <thread>

#include "collectives/twins/allreduce_twin_kernel.h"
#include "collectives/twins/alltoall_twin_kernel.h"
#include "collectives/twins/bounded_wait.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

}  // namespace

TwinRanks::TwinRanks(int nranks, size_t bytes, uint32_t first_epoch)
    : nranks_(nranks), epoch_(first_epoch) {
  for (int r = 0; r < nranks; ++r) {
    staging_.emplace_back(bytes);
    scratch_.emplace_back(bytes);
    signal_.push_back(std::make_unique<nc::Signal>());
    FillFlags(signal_.back().get(), first_epoch - 1);
  }
}

TwinRanks::~TwinRanks() = default;

bool TwinRanks::Run(const Case& c, const unsigned char* const* inputs,
                    unsigned char* const* outputs, std::string* why) {
  CommView view;
  for (int r = 0; r < nranks_; ++r) {
    view.staging[r] = staging_[r].data();
    view.scratch[r] = scratch_[r].data();
    view.signal[r] = signal_[r].get();
  }
  std::vector<nc::KernelStall> stalls(static_cast<size_t>(nranks_), nc::KernelStall{});
  std::vector<std::thread> ranks;
  for (int r = 0; r < nranks_; ++r) {
    const RankIo io{inputs[r], outputs[r], &stalls[static_cast<size_t>(r)]};
    const KernelParams p = MakeParams(c, view, r, io, epoch_, kTwinTimeoutNs);
    ranks.emplace_back([p, &c] {
      if (c.op == Op::kAlltoAll) {
        nc::RunAlltoAllTwinKernel(p.alltoall, c.blocks, c.threads);
      } else {
        nc::RunAllReduceTwinKernel(c.algorithm, c.dtype, p.allreduce, c.blocks, c.threads);
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  ++epoch_;
  for (const nc::KernelStall& k : stalls) {
    if (k.code == 0) continue;
    char text[160];
    nc::DescribeStall(
        nc::Stall{k.rank, k.peer, k.block, static_cast<nc::Barrier>(k.barrier), k.want, k.seen},
        text, sizeof(text));
    *why = std::string("the CPU twin stalled: ") + text;
    return false;
  }
  return true;
}

}  // namespace ncclscope::gpu_check
