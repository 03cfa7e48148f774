// Incremental reading of one ring file while its writer runs: each Poll hands over only what
// changed since the previous one. The writer stamps device completion into a record after the
// fact, so records still pending are read again until they complete; slots caught mid-write are
// retried a few times. Wrapping is detected from the writer's index: records overwritten before
// this reader saw them are counted, never guessed. Not thread-safe; one per file.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "exporters/sources/ring_source.h"
#include "trace/record.h"
#include "trace/ring_visitor.h"

namespace ncclscope::exporters {

// What a Poll found, in writer order. Only operations (collectives, send/recv), the names of
// their NVTX contexts, accel_stall, device_compute, event_duration and numerics records are
// reported.
class TailEvents {
 public:
  virtual ~TailEvents() = default;
  // The file changed identity (a new process reuses the name) or is seen for the first time:
  // everything learnt from it so far is void.
  virtual void Reset() = 0;
  // The header and comm table of this read, before any record.
  virtual void Header(const trace::RingInfo& info) = 0;
  // First sight of an operation; `Completed` follows at once when its completion is already in.
  virtual void Issued(const trace::StoredRecord& record) = 0;
  // Its device completion, once per operation. was_pending: Issued saw it still pending.
  virtual void Completed(const trace::StoredRecord& record, bool was_pending) = 0;
  // A pending operation whose completion will never be seen (untracked, or overwritten).
  virtual void Abandoned(const trace::StoredRecord& record) = 0;
  // A record naming an NVTX context (trace/record.h, "NVTX context"), before the operations that
  // use it. Not an operation: nothing else is told of it.
  virtual void NvtxName(const trace::StoredRecord& /*record*/) {}
  // An accel_stall record (trace/record.h): one of ncclscope's own kernels gave up waiting for a
  // peer. Not an operation: nothing else is told of it.
  virtual void AccelStall(const trace::StoredRecord& /*record*/) {}
  // A device_compute record (trace/record.h): how long one NCCL kernel ran on the GPU, as CUPTI
  // saw it, written after the operation completed. Not an operation: nothing else is told of it.
  virtual void DeviceCompute(const trace::StoredRecord& /*record*/) {}
  // An event_duration record (trace/record.h): an operation's device time as torch's CUDA events
  // measured it, from a Flight Recorder dump. Not an operation: nothing else is told of it.
  virtual void EventDuration(const trace::StoredRecord& /*record*/) {}
  // A numerics record (trace/numerics_record.h): what NCCLSCOPE_NUMERICS found in one sampled
  // collective, written after it completed. Not an operation: nothing else is told of it.
  virtual void Numerics(const trace::StoredRecord& /*record*/) {}
};

class FileTail {
 public:
  // A slot that stays mid-write for this many polls and at least kTornPatienceNs is given up (its
  // writer died mid-record). Both, because a live writer descheduled mid-record on a busy machine
  // can hold a slot through several quick polls.
  static constexpr int kTornRetries = 3;
  static constexpr int64_t kTornPatienceNs = 1000000000;
  // Unreadable slots remembered for a retry per pass; beyond, the file is damaged, not mid-write.
  static constexpr uint64_t kMaxTornTracked = 4096;

  // Reads what is new in `name`; now: CLOCK_MONOTONIC of the reader. False (and *error) when the
  // file cannot be read; the state is kept, so the next successful poll continues where this one
  // would have.
  bool Poll(RingSource& source, const std::string& name, int64_t now_ns, TailEvents* events,
            std::string* error);

  uint64_t missed() const { return missed_; }  // overwritten before this reader saw them
  uint64_t torn() const { return torn_; }      // given up after kTornRetries
  bool seen() const { return seen_; }          // read successfully at least once

 private:
  class Visitor;
  struct Revisit {
    bool pending = false;  // else: the slot was torn, the record not seen yet
    bool seen = false;     // delivered by the current pass
    int attempts = 0;
    int64_t since_ns = -1;         // first poll that could not read it
    trace::StoredRecord record{};  // pending only
  };
  void Forget();
  // After a pass: gives up slots that stayed unreadable or were overwritten, moves the cursor.
  void Settle(const Visitor& pass, int64_t now_ns, TailEvents* events);

  uint64_t cursor_ = 0;  // first writer index not read yet
  int pid_ = -1;
  int64_t start_realtime_ns_ = 0;
  bool seen_ = false;
  std::map<uint64_t, Revisit> revisit_;
  uint64_t missed_ = 0;
  uint64_t torn_ = 0;
};

}  // namespace ncclscope::exporters
