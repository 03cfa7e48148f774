#include "plugin/runtime/group_tracker.h"

#include <atomic>

namespace ncclscope::plugin {
namespace {

std::atomic<uint64_t> g_last_group_id{0};

void FlushPending(ThreadState& ts, CompletionTracker* tracker, bool launched) noexcept {
  const uint32_t n = ts.pending_count;
  ts.pending_count = 0;
  if (n == 0 || tracker == nullptr) return;
  uint64_t slots[kMaxPendingInGroup];
  bool done[kMaxPendingInGroup] = {};
  // One event per distinct stream, recorded after the whole group was launched on it: the event
  // fires when every call of the group on that stream has finished.
  for (uint32_t i = 0; i < n; ++i) {
    if (done[i]) continue;
    const cudaStream_t stream = ts.pending[i].stream;
    uint32_t k = 0;
    for (uint32_t j = i; j < n; ++j) {
      if (!done[j] && ts.pending[j].stream == stream) {
        done[j] = true;
        slots[k++] = ts.pending[j].slot;
      }
    }
    const int32_t token = launched ? tracker->RecordOn(stream) : -1;
    if (token >= 0) {
      tracker->Submit(token, slots, k);
    } else {
      tracker->Abandon(slots, k);
    }
  }
}

}  // namespace

uint64_t OnGroupStart(ThreadState& ts) noexcept {
  if (ts.group_depth++ == 0) {
    ts.group_id = g_last_group_id.fetch_add(1, std::memory_order_relaxed) + 1;
    ts.pending_count = 0;
  }
  return ts.group_id;
}

bool AddPending(ThreadState& ts, uint64_t slot, cudaStream_t stream) noexcept {
  if (ts.pending_count >= kMaxPendingInGroup) return false;
  ts.pending[ts.pending_count++] = PendingCompletion{slot, stream};
  return true;
}

uint64_t OnGroupEnd(ThreadState& ts, CompletionTracker* tracker, bool launched) noexcept {
  const uint64_t id = ts.group_id;
  if (ts.group_depth == 0) return 0;
  if (--ts.group_depth == 0) {
    FlushPending(ts, tracker, launched);
    ts.group_id = 0;
  }
  return id;
}

}  // namespace ncclscope::plugin
