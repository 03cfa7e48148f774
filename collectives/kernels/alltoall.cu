// ncclscope's all-to-all kernel for one node over peer memory (docs/collectives.md, "All-to-all"):
// ncclAlltoAll's layout, every rank pulling its block of every rank's staging buffer (or
// registered sendbuff) into its recvbuff at peer x count. collectives/twins/alltoall_twin.cpp is
// its CPU twin, step for step: the same copy-in, the same mapping of each peer's packs to (block,
// thread), the same peer order, the same barriers and epochs (collectives/planner/epoch.h). Change
// one and the other together.
#include <cstdint>

#include "collectives/kernels/device_steps.cuh"
#include "collectives/planner/alltoall_kernel_args.h"

namespace ncclscope::collectives {
namespace {

// One barrier of this block (device_steps.cuh).
__device__ bool Cross(const AlltoAllKernelArgs& a, Barrier which, uint64_t deadline) {
  return CrossBarrier({a.signal, a.stall, a.rank, a.nranks, a.epoch}, which, deadline);
}

__device__ void Pull(const AlltoAllKernelArgs& a) {
  const uint64_t deadline = GlobalTimerNs() + a.timeout_ns;
  const uint64_t per_peer = a.packs_per_peer;
  const auto* input = reinterpret_cast<const uint4*>(a.input);
  if (a.copy_in) {
    auto* staging = reinterpret_cast<uint4*>(a.staging);
    for (int s = 0; s < a.nranks; ++s) {
      const uint64_t base = static_cast<uint64_t>(s) * per_peer;
      ForEachPack(0, per_peer, [&](uint64_t i) { staging[base + i] = input[base + i]; });
    }
  }
  if (!Cross(a, Barrier::kStart, deadline)) return;
  auto* out = reinterpret_cast<uint4*>(a.output);
  const uint64_t mine = static_cast<uint64_t>(a.rank) * per_peer;  // my block in every input
  for (int j = 1; j <= a.nranks; ++j) {
    const int peer = (a.rank + j) % a.nranks;  // rank+1 first, itself last
    const auto* from = reinterpret_cast<const uint4*>(a.source[peer]);
    const uint64_t to = static_cast<uint64_t>(peer) * per_peer;
    ForEachPack(0, per_peer, [&](uint64_t i) { out[to + i] = from[mine + i]; });
  }
  Cross(a, Barrier::kEnd, deadline);
}

}  // namespace
}  // namespace ncclscope::collectives

// The entry point (alltoall_kernel_args.h, kAlltoAllKernelName): a plain C name the driver API
// finds with cuModuleGetFunction.
extern "C" __global__ void ncclscope_alltoall_pull(ncclscope::collectives::AlltoAllKernelArgs a) {
  ncclscope::collectives::Pull(a);
}
