#include "exporters/sources/file_tail.h"

#include <algorithm>

#include "exporters/measures/operation_size.h"
#include "trace/nvtx_names.h"

namespace ncclscope::exporters {

// One pass over the file: new records from the cursor on, and the slots to revisit before it.
class FileTail::Visitor final : public trace::RingVisitor {
 public:
  Visitor(FileTail* tail, TailEvents* events) : tail_(tail), events_(events) {}

  bool restart() const { return restart_; }
  uint64_t overwritten() const { return overwritten_; }
  uint64_t write_pos() const { return write_pos_; }

  void BeginFile(const trace::RingInfo& info) override {
    FileTail& t = *tail_;
    // A different process behind the same name, or a shorter stream than already read: start
    // over rather than mix two writers' records.
    if (t.seen_ && (info.pid != t.pid_ || info.start_realtime_ns != t.start_realtime_ns_ ||
                    info.write_pos < t.cursor_)) {
      restart_ = true;
      return;
    }
    if (!t.seen_) {
      t.seen_ = true;
      t.pid_ = info.pid;
      t.start_realtime_ns_ = info.start_realtime_ns;
      events_->Reset();
    }
    overwritten_ = info.overwritten;
    write_pos_ = info.write_pos;
    next_ = std::max(t.cursor_, info.overwritten);
    events_->Header(info);
  }

  void Records(const trace::StoredRecord* batch, size_t n) override {
    if (restart_) return;
    for (size_t i = 0; i < n; ++i) {
      const trace::StoredRecord& r = batch[i];
      if (r.index < tail_->cursor_) {
        Revisited(r);
        continue;
      }
      MarkTorn(next_, r.index);
      New(r);
      next_ = r.index + 1;
    }
  }

  // Counted by the writer as dropped: neither read again nor given up as torn later.
  void Dropped(uint64_t index) override {
    if (restart_) return;
    if (index < tail_->cursor_) {
      const auto it = tail_->revisit_.find(index);
      if (it != tail_->revisit_.end() && !it->second.pending) tail_->revisit_.erase(it);
      return;
    }
    MarkTorn(next_, index);
    next_ = index + 1;
  }

  void EndFile(const trace::RingInfo& info) override {
    if (!restart_) MarkTorn(next_, info.write_pos);
  }

 private:
  // Slots the reader skipped because their commit word did not match: mid-write, most likely, and
  // then a handful. More than kMaxTornTracked in one pass is a damaged file (a write position
  // nothing was written at): counted at once instead of remembered one by one.
  void MarkTorn(uint64_t begin, uint64_t end) {
    if (end - begin > kMaxTornTracked) {
      tail_->torn_ += end - begin;
      return;
    }
    for (uint64_t index = begin; index < end; ++index) tail_->revisit_[index] = Revisit{};
  }

  void New(const trace::StoredRecord& r) {
    if (trace::NvtxNames::IsNameRecord(r.data)) {
      events_->NvtxName(r);
      return;
    }
    if (r.data.op == static_cast<uint32_t>(trace::OpType::kAccelStall)) {
      events_->AccelStall(r);
      return;
    }
    if (r.data.op == static_cast<uint32_t>(trace::OpType::kDeviceCompute)) {
      events_->DeviceCompute(r);
      return;
    }
    if (r.data.op == static_cast<uint32_t>(trace::OpType::kEventDuration)) {
      events_->EventDuration(r);
      return;
    }
    if (r.data.op == static_cast<uint32_t>(trace::OpType::kNumerics)) {
      events_->Numerics(r);
      return;
    }
    if (!IsOperation(static_cast<trace::OpType>(r.data.op))) return;
    events_->Issued(r);
    const int64_t done = r.data.t_device_done_ns;
    if (trace::IsPending(done)) {
      Revisit& v = tail_->revisit_[r.index];
      v.pending = true;
      v.seen = true;
      v.record = r;
    } else if (done != trace::kDoneUntracked) {
      events_->Completed(r, false);
    }
  }

  void Revisited(const trace::StoredRecord& r) {
    const auto it = tail_->revisit_.find(r.index);
    if (it == tail_->revisit_.end()) return;
    if (!it->second.pending) {  // torn last time, readable now
      tail_->revisit_.erase(it);
      New(r);
      return;
    }
    const int64_t done = r.data.t_device_done_ns;
    if (trace::IsPending(done)) {
      it->second.seen = true;
      return;
    }
    if (done == trace::kDoneUntracked) {
      events_->Abandoned(it->second.record);
    } else {
      events_->Completed(r, true);
    }
    tail_->revisit_.erase(it);
  }

  FileTail* tail_;
  TailEvents* events_;
  bool restart_ = false;
  uint64_t overwritten_ = 0;
  uint64_t write_pos_ = 0;
  uint64_t next_ = 0;  // writer index the next new record should have
};

void FileTail::Forget() {
  cursor_ = 0;
  seen_ = false;
  revisit_.clear();
}

bool FileTail::Poll(RingSource& source, const std::string& name, int64_t now_ns, TailEvents* events,
                    std::string* error) {
  for (auto& [index, v] : revisit_) v.seen = false;
  const uint64_t first = revisit_.empty() ? cursor_ : std::min(cursor_, revisit_.begin()->first);
  Visitor pass(this, events);
  if (!source.Visit(name, first, &pass, error)) return false;
  if (pass.restart()) {
    Forget();
    Visitor fresh(this, events);
    if (!source.Visit(name, 0, &fresh, error)) return false;
    Settle(fresh, now_ns, events);
    return true;
  }
  Settle(pass, now_ns, events);
  return true;
}

void FileTail::Settle(const Visitor& pass, int64_t now_ns, TailEvents* events) {
  if (pass.overwritten() > cursor_) missed_ += pass.overwritten() - cursor_;
  for (auto it = revisit_.begin(); it != revisit_.end();) {
    Revisit& v = it->second;
    const bool lost = it->first < pass.overwritten();
    if (v.seen) {
      ++it;
      continue;
    }
    if (v.since_ns < 0) v.since_ns = now_ns;
    const bool patience_left = ++v.attempts < kTornRetries || now_ns - v.since_ns < kTornPatienceNs;
    if (!lost && patience_left) {
      ++it;
      continue;
    }
    if (v.pending) {
      events->Abandoned(v.record);
    } else {
      ++torn_;
    }
    it = revisit_.erase(it);
  }
  cursor_ = std::max(cursor_, pass.write_pos());
}

}  // namespace ncclscope::exporters
