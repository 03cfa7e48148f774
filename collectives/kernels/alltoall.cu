// ncclscope's all-to-all kernel for one node over peer memory (docs/collectives.md, "All-to-all"):
// ncclAlltoAll's layout, every rank pulling its block of every rank's staging buffer (or
// registered sendbuff) into its recvbuff at peer x count. collectives/alltoall_twin.cpp is its CPU
// twin, step for step: the same copy-in, the same mapping of each peer's packs to (block, thread),
// the same peer order, the same barriers and epochs (collectives/epoch.h). Change one and the
// other together.
#include <cstdint>

#include "collectives/alltoall_kernel_args.h"

namespace ncclscope::collectives {
namespace {

__device__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ void StoreRelease(uint32_t* flag, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(v) : "memory");
}

__device__ uint32_t LoadAcquire(const uint32_t* flag) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
  return v;
}

// One barrier of this block (the twin's CrossBarrier): thread q (< nranks) posts the epoch into
// rank q's slot for this rank, then waits for rank q's post into this rank's slot, until the
// deadline. __syncthreads on both sides orders the block's memory operations with the flags.
// Returns false on every thread when a wait of the block expired (the first such block in the grid
// fills *a.stall).
__device__ bool Cross(const AlltoAllKernelArgs& a, Barrier which, uint64_t deadline) {
  __shared__ int expired;
  if (threadIdx.x == 0) expired = 0;
  __syncthreads();
  const int q = static_cast<int>(threadIdx.x);
  if (q < a.nranks) {
    StoreRelease(FlagOf(a.signal[q], blockIdx.x, which, a.rank), a.epoch);
    const uint32_t* mine = FlagOf(a.signal[a.rank], blockIdx.x, which, q);
    for (;;) {
      const uint32_t seen = LoadAcquire(mine);
      if (EpochReached(seen, a.epoch)) break;
      if (GlobalTimerNs() > deadline) {
        expired = 1;
        if (atomicCAS(&a.stall->code, 0, 1) == 0) {
          a.stall->rank = a.rank;
          a.stall->peer = q;
          a.stall->block = blockIdx.x;
          a.stall->barrier = static_cast<uint32_t>(which);
          a.stall->want = a.epoch;
          a.stall->seen = seen;
          __threadfence_system();
        }
        break;
      }
    }
  }
  __syncthreads();
  return expired == 0;
}

// The packs [begin, begin + len) this thread handles: the grid-stride loop of the twin's
// ForEachPackOfBlock.
template <typename F>
__device__ void ForEachPack(uint64_t begin, uint64_t len, F f) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < len;
       i += stride) {
    f(begin + i);
  }
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
