// What the CPU twins of MoE dispatch and combine (moe_dispatch_twin.cpp, moe_combine_twin.cpp)
// share: the check of a call's arguments, every rank's registered buffer as mapped here, the
// grid-wide barrier, and the call's status. The twins run a call's blocks phase by phase (every
// block's steps up to a barrier, then every block's wait): the kernels' blocks run at once and
// wait for every block of every rank at each barrier, which a twin running one block to its end
// before the next could never pass.
#pragma once

#include <cstdint>

#include "collectives/include/ncclscope/moe.h"
#include "collectives/moe/moe_buffer.h"
#include "collectives/twins/bounded_wait.h"
#include "collectives/twins/twin_steps.h"

namespace ncclscope::collectives {

// One call of one rank, as the twin sees it.
struct MoeTwinCall {
  const ncclscope_moe_common_args* args;
  const ncclscope_moe_plan* plan;
  int rank;
  int nranks;
  uint32_t blocks;
  MoeBuffer buffer[kMaxRanks];  // every rank's, as mapped here
  Signal* signal[kMaxRanks];
  BarrierSide side;
  uint32_t expected_epoch;  // the one after the buffer's last call
};

// Whether `a` can be a call made from a plan: the plan is what ncclscope_moe_plan_make gives for
// its config, the rank is one of its ranks, every buffer and the status are given.
bool MoeArgsPlausible(const ncclscope_moe_common_args& a) noexcept;

// Whether p is a multiple of `bytes` (null is): what the kernels' 16-byte packs and 128-byte flags
// need (moe.h), refused here too so a caller on the CPU learns it before a GPU faults.
inline bool Aligned(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// The call's view (MoeArgsPlausible first); every wait ends timeout_ns from now.
MoeTwinCall MoeTwinCallOf(const ncclscope_moe_common_args& a) noexcept;

// Block b's side of a grid-wide barrier: post the epoch to every rank...
void PostGridBarrier(const MoeTwinCall& c, uint32_t b, Barrier which) noexcept;
// ...and wait until every block of every rank has posted it. False when a wait expired, *stall
// naming the rank and block that never posted.
bool WaitGridBarrier(const MoeTwinCall& c, Barrier which, Stall* stall) noexcept;

// After the end barrier: the first error any rank's block reported (rank order, then block
// order), written to the call's status, the same on every rank; the call's epoch left in this
// rank's buffer. Returns its code.
ncclscope_moe_result FinishMoeCall(const MoeTwinCall& c) noexcept;

// The call's epoch is not the one after the buffer's last (a replay without
// NCCLSCOPE_MOE_DEVICE_EPOCH): a NCCLSCOPE_MOE_STALE_EPOCH status, nothing else touched.
ncclscope_moe_result MoeCallStale(const MoeTwinCall& c) noexcept;

// A wait expired: the stall record (when given), a NCCLSCOPE_MOE_TIMEOUT status, the call's epoch
// left in this rank's buffer.
ncclscope_moe_result MoeCallTimedOut(const MoeTwinCall& c, const Stall& stall) noexcept;

// The first error of a block: a later one leaves it.
inline void NoteError(MoeError* e, int32_t code, int32_t detail) {
  if (e->code == 0) *e = MoeError{code, detail};
}

// One call's blocks run as the kernel's grid would, in turn (the grid barriers wait for every
// block): every block's source side, the start barrier, [every block's middle step, the middle
// barrier,] every block's receive side and its error into this rank's header, the end barrier,
// then `finish` per block (after the barrier). `steps` has Source(b, MoeError*), Receive(b,
// MoeError*), header(rank) and, with kMiddle (combine's rank sums), Middle(b, MoeError*).
template <bool kMiddle = false, typename Steps, typename Finish>
ncclscope_moe_result RunMoeBlocks(const MoeTwinCall& c, const Steps& steps, Finish finish) {
  if (c.side.epoch != c.expected_epoch) return MoeCallStale(c);
  MoeError err[kMaxBlocks] = {};
  Stall stall;
  for (uint32_t b = 0; b < c.blocks; ++b) {
    steps.Source(b, &err[b]);
    PostGridBarrier(c, b, Barrier::kStart);
  }
  if constexpr (kMiddle) {
    for (uint32_t b = 0; b < c.blocks; ++b) {
      if (!WaitGridBarrier(c, Barrier::kStart, &stall)) return MoeCallTimedOut(c, stall);
      steps.Middle(b, &err[b]);
      PostGridBarrier(c, b, Barrier::kMiddle);
    }
  }
  constexpr Barrier kBeforeReceive = kMiddle ? Barrier::kMiddle : Barrier::kStart;
  for (uint32_t b = 0; b < c.blocks; ++b) {
    if (!WaitGridBarrier(c, kBeforeReceive, &stall)) return MoeCallTimedOut(c, stall);
    steps.Receive(b, &err[b]);
    steps.header(c.rank)->error[b] = err[b];
    PostGridBarrier(c, b, Barrier::kEnd);
  }
  for (uint32_t b = 0; b < c.blocks; ++b) {
    if (!WaitGridBarrier(c, Barrier::kEnd, &stall)) return MoeCallTimedOut(c, stall);
    finish(b);
  }
  return FinishMoeCall(c);
}

}  // namespace ncclscope::collectives
