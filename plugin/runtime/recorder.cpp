#include "plugin/runtime/recorder.h"

#include "plugin/runtime/group_tracker.h"

namespace ncclscope::plugin {

void EmitHostRecord(const CallFrame& f, const trace::RecordData& d) noexcept {
  f.rt->ring->Append(d, false);
}

uint64_t OpenHostRecord(const CallFrame& f, trace::RecordData d) noexcept {
  d.t_exit_ns = 0;
  d.result = trace::kResultInCall;
  return f.rt->ring->Append(d, false);
}

void CloseHostRecord(const CallFrame& f, uint64_t slot, const trace::RecordData& d) noexcept {
  f.rt->ring->CloseCall(slot, d);
}

void EmitTrackedDeviceRecord(const CallFrame& f, trace::RecordData& d,
                             cudaStream_t stream) noexcept {
  trace::RingWriter& ring = *f.rt->ring;
  CompletionTracker* tracker = f.rt->tracker.get();
  // Only a successful call has device work whose end an event can observe; ncclInProgress (a
  // non-blocking communicator) may not have enqueued anything yet.
  if (d.result != ncclSuccess || !tracker->Ready()) {
    ring.Append(d, false);
    return;
  }
  ThreadState& ts = *f.ts;
  if (ts.group_depth != 0) {
    if (ts.pending_count >= kMaxPendingInGroup) {
      ring.Append(d, false);
      ring.CountUntrackedCompletion();
      return;
    }
    d.flags |= trace::kFlagCompletionTracked;
    AddPending(ts, ring.Append(d, true), stream);
    return;
  }
  const int32_t token = tracker->RecordOn(stream);
  if (token < 0) {
    ring.Append(d, false);
    return;
  }
  d.flags |= trace::kFlagCompletionTracked;
  const uint64_t slot = ring.Append(d, true);
  tracker->Submit(token, &slot, 1);
}

}  // namespace ncclscope::plugin
