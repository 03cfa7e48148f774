// Interposed group calls: group nesting and ids, and the completion events of grouped calls.
#include <nccl.h>

#include "plugin/accel/accel_group.h"
#include "plugin/core/export.h"
#include "plugin/core/nccl_symbols.h"
#include "plugin/core/probe_clock.h"
#include "plugin/cupti/cupti_correlate.h"
#include "plugin/numerics/numerics_probe.h"
#include "plugin/runtime/group_tracker.h"
#include "plugin/runtime/recorder.h"

namespace ncclscope::plugin {
namespace {

template <typename Forward>
ncclResult_t GroupStart(Forward&& forward) noexcept {
  CallFrame f;
  if (!BeginCall(&f)) return forward();
  const ncclResult_t r = forward();
  const int err = errno;
  if (r == ncclSuccess) OnGroupStart(*f.ts);
  trace::RecordData d = MakeRecord(f, trace::OpType::kGroupStart, r);
  d.flags &= ~trace::kFlagInGroup;
  EmitHostRecord(f, d);
  EndCall(&f, err);
  return r;
}

// GroupEnd launches the group's work; GroupSimulateEnd closes the group without launching.
template <typename Forward>
ncclResult_t GroupEnd(trace::OpType op, Forward&& forward) noexcept {
  CallFrame f;
  if (!BeginCall(&f)) return forward();
  trace::RecordData d = MakeRecord(f, op, ncclSuccess);
  d.flags &= ~trace::kFlagInGroup;
  // Connection setup for the group's peers happens here and blocks until they take part.
  // NCCLSCOPE_ACCEL: the sends and receives the group held back run on ncclscope's exchange or
  // reach NCCL now, still inside the group (its outermost end; a simulated end launches nothing),
  // their records before the group end's as if they had reached NCCL at their calls.
  if (__builtin_expect(f.ts->held_comm != nullptr, 0) && f.ts->group_depth == 1) {
    if (op == trace::OpType::kGroupEnd) {
      EndHeldGroup(f);
    } else {
      FlushHeldP2p(f);
    }
  }
  const uint64_t slot = OpenHostRecord(f, d);
  const ncclResult_t r = CorrelatedCall(f, forward);
  const int err = errno;
  const bool launched = op == trace::OpType::kGroupEnd && r == ncclSuccess;
  d.result = r;
  d.t_exit_ns = ProbeNowNs();
  d.group_id = OnGroupEnd(*f.ts, f.rt->tracker.get(), launched);
  // NCCLSCOPE_NUMERICS: outputs of the group's sampled collectives are final on their streams now.
  if (__builtin_expect(f.ts->numerics_deferred_count != 0, 0) && f.ts->group_depth == 0) {
    f.rt->numerics->AtOutermostGroupEnd(*f.ts, launched);
  }
  CloseHostRecord(f, slot, d);
  EndCall(&f, err);
  return r;
}

}  // namespace
}  // namespace ncclscope::plugin

using ncclscope::plugin::GroupEnd;
using ncclscope::trace::OpType;

NCCLSCOPE_API ncclResult_t ncclGroupStart() {
  return ncclscope::plugin::GroupStart(NCCLSCOPE_FORWARD(GroupStart));
}

NCCLSCOPE_API ncclResult_t ncclGroupEnd() {
  return GroupEnd(OpType::kGroupEnd, NCCLSCOPE_FORWARD(GroupEnd));
}

NCCLSCOPE_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return GroupEnd(OpType::kGroupSimulateEnd, NCCLSCOPE_FORWARD(GroupSimulateEnd, simInfo));
}
