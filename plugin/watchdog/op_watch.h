// Feeds the stall rule from this process's own ring, on the background thread: every new record of
// a watched class is an issue; a device operation completes when its completion is stamped, a
// blocking call ("in call" record) when it returns. Reading the ring instead of hooking the
// interposer keeps the hot path untouched. Not thread-safe: the background thread owns it.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "plugin/watchdog/stall_rule.h"
#include "trace/ring_writer.h"

namespace ncclscope::plugin {

class OpWatch {
 public:
  // ring and rule outlive the watch. max_watched bounds the in-flight operations followed (reserved
  // here; more are counted in skipped() and not followed). Scanning starts at the ring's current
  // end. Allocates; construction only.
  OpWatch(const trace::RingWriter* ring, StallRule* rule, size_t max_watched);

  // Reads the records appended since the last scan and re-reads the ones in flight.
  void Scan();

  // The distinct communicators of the operations in flight, at most out->size() of them (the
  // oldest operations' first); returns how many were written.
  template <size_t N>
  size_t InFlightComms(std::array<uint64_t, N>* out) const {
    return InFlightComms(out->data(), N);
  }
  size_t InFlightComms(uint64_t* out, size_t max) const;

  // The watchdog aborted communicator `id` (NCCLSCOPE_ON_HANG=abort): whatever completion its work
  // in flight shows from now on was forced by the abort, so it leaves the in-flight set without
  // counting as progress or as a latency (an aborted wait is not what the job's operations take).
  // Thread-safe: the watchdog's thread calls it while the background thread scans. Beyond
  // kMaxAborted communicators the rest count as completed.
  void MarkAborted(uint64_t id) noexcept;
  static constexpr size_t kMaxAborted = 64;

  // Records not examined (the ring wrapped past them, or too many in flight), for tests.
  uint64_t skipped() const { return skipped_; }
  size_t watched() const { return watched_.size(); }

 private:
  struct Watched {
    uint64_t index;
    uint64_t comm_id;
    int64_t t_enter;
    int8_t cls;
    bool device;  // device completion (else: the call's return)
  };
  void Examine(uint64_t index, const trace::RecordData& d);
  // Whether w is finished (completed or lost); feeds the rule.
  bool Settle(const Watched& w);
  bool Aborted(uint64_t comm_id) const;

  const trace::RingWriter* ring_;
  StallRule* rule_;
  uint64_t next_ = 0;        // next record index to examine
  uint32_t unreadable_ = 0;  // consecutive scans that found record next_ still being written
  uint64_t skipped_ = 0;
  std::vector<Watched> watched_;
  std::array<std::atomic<uint64_t>, kMaxAborted> aborted_{};  // 0: not written yet
  std::atomic<uint32_t> aborted_count_{0};
};

}  // namespace ncclscope::plugin
