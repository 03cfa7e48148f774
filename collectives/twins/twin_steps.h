// The steps every CPU twin of ncclscope's kernels is built from: the grid-stride mapping of
// 16-byte packs to (block, thread) and one block's side of a barrier, shared by the AllReduce and
// all-to-all twins.
#pragma once

#include <cstddef>
#include <cstdint>

#include <atomic>

#include "collectives/planner/allreduce_kernel_args.h"
#include "collectives/planner/epoch.h"
#include "collectives/twins/bounded_wait.h"

namespace ncclscope::collectives {

// The packs [begin, begin + len) block b of `blocks` handles, each of its `threads` threads taking
// every (blocks x threads)-th pack from its own index, as the kernels' grid-stride loop does.
template <typename F>
void ForEachPackOfBlock(size_t begin, size_t len, uint32_t b, uint32_t blocks, uint32_t threads,
                        F f) {
  const size_t stride = static_cast<size_t>(blocks) * threads;
  for (size_t i = static_cast<size_t>(b) * threads; i < len; i += stride) {
    for (size_t t = 0; t < threads && i + t < len; ++t) f(begin + i + t);
  }
}

// Who crosses a barrier: this rank of nranks, at this call's epoch, by this deadline.
struct BarrierSide {
  int rank;
  int nranks;
  uint32_t epoch;
  int64_t deadline_ns;
  Signal* const* signal;  // every rank's flags as mapped here (index: rank)
};

// This rank's side of one barrier of block b: post the epoch to every rank (itself included), then
// wait for every rank's. False when a wait expired, *stall naming the rank that never posted.
inline bool CrossBarrier(const BarrierSide& s, uint32_t b, Barrier which, Stall* stall) {
  for (int q = 0; q < s.nranks; ++q) PostEpoch(FlagOf(s.signal[q], b, which, s.rank), s.epoch);
  for (int q = 0; q < s.nranks; ++q) {
    *stall = Stall{s.rank, q, b, which, s.epoch, 0};
    if (!WaitForEpoch(FlagOf(s.signal[s.rank], b, which, q), s.epoch, s.deadline_ns, stall)) {
      return false;
    }
  }
  return true;
}

// Whether a twin launch is one the planner can make; any other touches nothing.
inline bool PlausibleLaunch(int rank, int nranks, uint32_t blocks, uint32_t threads) {
  return nranks >= 1 && nranks <= kMaxRanks && rank >= 0 && rank < nranks && blocks != 0 &&
         blocks <= kMaxBlocks && threads != 0;
}

// Writes the first expired wait of a launch into the kernel's stall record, as the kernels' first
// timed-out block does (atomicCAS on code): a later one (another block) leaves it.
inline void RecordKernelStall(KernelStall* out, const Stall& s) {
  int32_t expected = 0;
  if (!std::atomic_ref<int32_t>(out->code).compare_exchange_strong(expected, 1)) return;
  out->rank = s.rank;
  out->peer = s.peer;
  out->block = s.block;
  out->barrier = static_cast<uint32_t>(s.barrier);
  out->want = s.want;
  out->seen = s.seen;
}

}  // namespace ncclscope::collectives
