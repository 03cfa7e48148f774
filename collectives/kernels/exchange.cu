// ncclscope's exchange kernel for one node over peer memory (docs/collectives.md, "Grouped sends
// and receives"): the parts of one group's ncclSend/ncclRecv calls, each through its sender's
// two staging slots for its destination in chunks, one block per (part, share of a chunk), all
// blocks co-resident.
// collectives/twins/exchange_twin.cpp is its CPU twin, step for step: the same units, shares, flags
// (epoch.h: chunk_ready, slot_free) and order of waits and posts. Change one and the other
// together.
#include <cstdint>

#include "collectives/kernels/device_steps.cuh"
#include "collectives/planner/exchange_kernel_args.h"

namespace ncclscope::collectives {
namespace {

// Thread 0 waits until `flag` reaches `want` or the deadline passes; the block then goes on
// together (bar.sync after the acquire, as CrossBarrier). False on every thread when it expired;
// the grid's first expired wait fills the stall record.
__device__ bool WaitFlag(const ExchangeKernelArgs& a, const uint32_t* flag, uint32_t want, int peer,
                         Barrier which, uint32_t share, uint64_t deadline) {
  __shared__ int expired;
  if (threadIdx.x == 0) {
    expired = 0;
    for (;;) {
      const uint32_t seen = LoadAcquire(flag);
      if (EpochReached(seen, want)) break;
      if (GlobalTimerNs() > deadline) {
        expired = 1;
        if (atomicCAS(&a.stall->code, 0, 1) == 0) {
          a.stall->rank = a.rank;
          a.stall->peer = peer;
          a.stall->block = share;
          a.stall->barrier = static_cast<uint32_t>(which);
          a.stall->want = want;
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

// After the block's copies (bar.sync), thread 0 makes them visible to the peer and posts k.
__device__ void Post(uint32_t* flag, uint32_t k) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    StoreRelease(flag, k);
  }
}

// One share: 16-byte packs when both ends are aligned, bytes otherwise (a part's place in a
// user buffer need not be: an all-to-all(v)'s split offsets are element counts).
__device__ void CopyShare(unsigned char* to, const unsigned char* from, uint64_t len) {
  const auto aligned = (reinterpret_cast<uintptr_t>(to) | reinterpret_cast<uintptr_t>(from)) % 16;
  if (aligned == 0 && len % 16 == 0) {
    auto* t = reinterpret_cast<uint4*>(to);
    const auto* f = reinterpret_cast<const uint4*>(from);
    for (uint64_t i = threadIdx.x; i < len / 16; i += blockDim.x) t[i] = f[i];
    return;
  }
  for (uint64_t i = threadIdx.x; i < len; i += blockDim.x) to[i] = from[i];
}

__device__ void Exchange(const ExchangeKernelArgs& a) {
  const uint32_t part = blockIdx.x / a.blocks_per_part;
  const uint32_t share = blockIdx.x % a.blocks_per_part;
  if (part >= a.nparts) return;
  const ExchangePartArgs& p = a.part[part];
  const uint64_t deadline = GlobalTimerNs() + a.timeout_ns;
  const uint64_t chunks = (p.bytes + a.slot_bytes - 1) / a.slot_bytes;
  const int me = a.rank;
  const int peer = p.peer;
  const uint64_t offset = share * a.sub_bytes;
  for (uint64_t c = 0; c < chunks; ++c) {
    const uint32_t k = p.first_chunk + static_cast<uint32_t>(c) + 1;
    const uint64_t begin = c * a.slot_bytes + offset;
    const uint64_t len = begin >= p.bytes ? 0 : min(a.sub_bytes, p.bytes - begin);
    if (p.send != 0) {
      // The slot chunk k uses; chunk k - 2 was its last (exchange_kernel_args.h).
      unsigned char* slot = a.staging[me] + ExchangeSlotOffset(peer, k, a.slot_bytes);
      if (!WaitFlag(a, FlagOf(a.signal[me], share, Barrier::kSlotFree, peer),
                    k - kExchangeSlotsPerPeer, peer, Barrier::kSlotFree, share, deadline)) {
        return;
      }
      CopyShare(slot + offset, p.user + begin, len);
      Post(FlagOf(a.signal[peer], share, Barrier::kChunkReady, me), k);
    } else {
      const unsigned char* slot = a.staging[peer] + ExchangeSlotOffset(me, k, a.slot_bytes);
      if (!WaitFlag(a, FlagOf(a.signal[me], share, Barrier::kChunkReady, peer), k, peer,
                    Barrier::kChunkReady, share, deadline)) {
        return;
      }
      CopyShare(p.user + begin, slot + offset, len);
      Post(FlagOf(a.signal[peer], share, Barrier::kSlotFree, me), k);
    }
  }
  // The sender leaves only once the receiver took the last chunk: a later kernel of the
  // communicator may rewrite the slot.
  if (p.send != 0 && chunks > 0) {
    const uint32_t last = p.first_chunk + static_cast<uint32_t>(chunks);
    WaitFlag(a, FlagOf(a.signal[me], share, Barrier::kSlotFree, peer), last, peer,
             Barrier::kSlotFree, share, deadline);
  }
}

}  // namespace
}  // namespace ncclscope::collectives

// The entry point (exchange_kernel_args.h, kExchangeKernelName): a plain C name the driver API
// finds with cuModuleGetFunction. Grid: nparts x blocks_per_part blocks, all co-resident.
extern "C" __global__ void ncclscope_exchange(ncclscope::collectives::ExchangeKernelArgs a) {
  ncclscope::collectives::Exchange(a);
}
