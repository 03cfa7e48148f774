// The device steps every kernel of ncclscope's collectives is built from, the GPU side of the CPU
// twins' collectives/twins/twin_steps.h: the global timer, release/acquire flag accesses, one
// block's side of a barrier bounded by a deadline, and the grid-stride mapping of 16-byte packs to
// threads. Included by each kernel source (each its own fatbin); change with twin_steps.h.
#pragma once

#include <cstdint>

#include "collectives/planner/allreduce_kernel_args.h"
#include "collectives/planner/epoch.h"

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

// Who crosses a barrier: this rank of nranks at this call's epoch, every rank's flags as mapped
// here, and where the first expired wait of the grid is written.
struct DeviceBarrier {
  Signal* const* signal;
  KernelStall* stall;
  int rank;
  int nranks;
  uint32_t epoch;
};

// One barrier of this block (the twin's CrossBarrier): thread q (< nranks) posts the epoch into
// rank q's slot for this rank, then waits for rank q's post into this rank's slot, until the
// deadline. __syncthreads on both sides orders the block's memory operations with the flags.
// Returns false on every thread when a wait of the block expired (the first such block in the grid
// fills *stall).
__device__ bool CrossBarrier(const DeviceBarrier& s, Barrier which, uint64_t deadline) {
  __shared__ int expired;
  if (threadIdx.x == 0) expired = 0;
  __syncthreads();
  const int q = static_cast<int>(threadIdx.x);
  if (q < s.nranks) {
    StoreRelease(FlagOf(s.signal[q], blockIdx.x, which, s.rank), s.epoch);
    const uint32_t* mine = FlagOf(s.signal[s.rank], blockIdx.x, which, q);
    for (;;) {
      const uint32_t seen = LoadAcquire(mine);
      if (EpochReached(seen, s.epoch)) break;
      if (GlobalTimerNs() > deadline) {
        expired = 1;
        if (atomicCAS(&s.stall->code, 0, 1) == 0) {
          s.stall->rank = s.rank;
          s.stall->peer = q;
          s.stall->block = blockIdx.x;
          s.stall->barrier = static_cast<uint32_t>(which);
          s.stall->want = s.epoch;
          s.stall->seen = seen;
          __threadfence_system();
        }
        break;
      }
    }
  }
  __syncthreads();
  return expired == 0;
}

// The packs [begin, begin + len) this thread handles: the twins' ForEachPackOfBlock.
template <typename F>
__device__ void ForEachPack(uint64_t begin, uint64_t len, F f) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < len;
       i += stride) {
    f(begin + i);
  }
}

}  // namespace
}  // namespace ncclscope::collectives
