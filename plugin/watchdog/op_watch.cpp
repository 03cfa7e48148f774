#include "plugin/watchdog/op_watch.h"

#include <algorithm>

namespace ncclscope::plugin {
namespace {

// A slot claimed but not committed for this many scans belongs to a writer that died or was
// stopped mid-record: step over it rather than stop watching.
constexpr uint32_t kMaxUnreadableScans = 10;

}  // namespace

OpWatch::OpWatch(const trace::RingWriter* ring, StallRule* rule, size_t max_watched)
    : ring_(ring), rule_(rule) {
  watched_.reserve(max_watched);
  next_ = ring_->header().write_pos.load(std::memory_order_acquire);
}

void OpWatch::Examine(uint64_t index, const trace::RecordData& d) {
  const int cls = OpClassOf(static_cast<trace::OpType>(d.op));
  if (cls < 0) return;
  const auto op = static_cast<trace::OpType>(d.op);
  const bool device = trace::IsCollective(op) || trace::IsP2P(op);
  if (device) {
    if (d.t_device_done_ns == trace::kDoneUntracked) return;  // nothing to wait for
    if (d.t_device_done_ns >= 0) {                            // completed before we looked
      rule_->OnIssue(cls, d.t_exit_ns);
      rule_->OnComplete(cls, d.t_device_done_ns - d.t_enter_ns, d.t_device_done_ns);
      return;
    }
  } else if (d.result != trace::kResultInCall) {
    rule_->OnIssue(cls, d.t_enter_ns);
    rule_->OnComplete(cls, d.t_exit_ns - d.t_enter_ns, d.t_exit_ns);
    return;
  }
  if (watched_.size() == watched_.capacity()) {
    ++skipped_;
    return;
  }
  // A device operation waits from its enqueue's return; a blocking call from its entry.
  rule_->OnIssue(cls, device ? d.t_exit_ns : d.t_enter_ns);
  watched_.push_back({index, d.comm_id, d.t_enter_ns, static_cast<int8_t>(cls), device});
}

bool OpWatch::Settle(const Watched& w) {
  trace::RecordData d;
  if (!ring_->ReadSlot(w.index, &d)) {
    // Being rewritten (a call returning): look again next scan. Overwritten by a wrap: lost.
    const uint64_t end = ring_->header().write_pos.load(std::memory_order_acquire);
    if (end - w.index < ring_->capacity()) return false;
    rule_->OnForget(w.cls);
    return true;
  }
  if (w.device) {
    if (trace::IsPending(d.t_device_done_ns)) return false;
    if (d.t_device_done_ns == trace::kDoneUntracked || Aborted(w.comm_id)) {
      rule_->OnForget(w.cls);
    } else {
      rule_->OnComplete(w.cls, d.t_device_done_ns - w.t_enter, d.t_device_done_ns);
    }
    return true;
  }
  if (d.result == trace::kResultInCall) return false;
  rule_->OnComplete(w.cls, d.t_exit_ns - w.t_enter, d.t_exit_ns);
  return true;
}

void OpWatch::MarkAborted(uint64_t id) noexcept {
  const uint32_t at = aborted_count_.fetch_add(1, std::memory_order_relaxed);
  if (at < kMaxAborted) aborted_[at].store(id, std::memory_order_release);
}

bool OpWatch::Aborted(uint64_t comm_id) const {
  const uint32_t n =
      std::min<uint32_t>(aborted_count_.load(std::memory_order_acquire), kMaxAborted);
  for (uint32_t i = 0; i < n; ++i) {
    if (comm_id != 0 && aborted_[i].load(std::memory_order_acquire) == comm_id) return true;
  }
  return false;
}

size_t OpWatch::InFlightComms(uint64_t* out, size_t max) const {
  size_t n = 0;
  for (const Watched& w : watched_) {
    if (n == max) break;
    if (w.comm_id == 0 || std::find(out, out + n, w.comm_id) != out + n) continue;
    out[n++] = w.comm_id;
  }
  return n;
}

void OpWatch::Scan() {
  const uint64_t end = ring_->header().write_pos.load(std::memory_order_acquire);
  if (end - next_ > ring_->capacity()) {
    skipped_ += end - ring_->capacity() - next_;
    next_ = end - ring_->capacity();
  }
  while (next_ < end) {
    trace::RecordData d;
    if (!ring_->ReadSlot(next_, &d)) {
      if (++unreadable_ < kMaxUnreadableScans) break;
      ++skipped_;
    } else {
      Examine(next_, d);
    }
    unreadable_ = 0;
    ++next_;
  }
  watched_.erase(std::remove_if(watched_.begin(), watched_.end(),
                                [this](const Watched& w) { return Settle(w); }),
                 watched_.end());
}

}  // namespace ncclscope::plugin
