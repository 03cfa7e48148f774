// Streaming read of a ring file: the header and comm table once, then the records in order, in
// small batches handed to a visitor, so a reader of thousands of files never holds more than one
// file's mapping and one batch. ReadRingFile (ring_reader.h) is a visitor that keeps everything.
// Functions are thread-safe for distinct visitors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "trace/comm_info.h"
#include "trace/record.h"

namespace ncclscope::trace {

struct StoredRecord {
  uint64_t index;  // position in the writer's stream of records, 0-based, survives wrapping
  RecordData data;
};

// Everything about a ring file except its records.
struct RingInfo {
  std::string path;
  uint32_t format_version = 0;
  int pid = -1;
  int global_rank = -1;
  int local_rank = -1;
  int world_size = -1;
  std::string host;
  std::string job_id;
  uint32_t restart = 0;  // torchrun's restart count, 0 when unknown
  std::string gpu_uuid;  // "GPU-..." of the first communicator's device; empty when not known
  int64_t start_realtime_ns = 0;
  int64_t start_monotonic_ns = 0;
  int64_t heartbeat_monotonic_ns = 0;
  uint32_t nccl_version = 0;
  uint32_t flags = 0;
  uint64_t record_capacity = 0;
  uint64_t write_pos = 0;
  uint64_t overwritten = 0;  // records lost to wrapping: write_pos - capacity when positive
  uint64_t dropped_records = 0;
  uint64_t dropped_comms = 0;
  uint64_t untracked_completions = 0;
  uint64_t unknown_comm_records = 0;  // records of calls on communicators we never saw created
  uint64_t torn_records = 0;          // slots mid-write at read time (or when the writer died)
  uint64_t numerics_skipped = 0;      // sampled collectives the numerics passes missed
  std::vector<CommInfo> comms;
};

class RingVisitor {
 public:
  virtual ~RingVisitor() = default;
  // Header and comm table. write_pos - overwritten bounds the number of records that follow;
  // torn_records is still 0 here.
  virtual void BeginFile(const RingInfo& info) = 0;
  // Consecutive records, oldest first; torn slots are skipped (and counted), so indices can jump.
  // The batch is only valid during the call.
  virtual void Records(const StoredRecord* batch, size_t n) = 0;
  // A slot whose writer dropped its record (already counted in dropped_records: the slot was
  // still owned by a writer preempted a whole lap earlier). In index order with the batches, so an
  // incremental reader knows not to wait for it.
  virtual void Dropped(uint64_t /*index*/) {}
  // After the last batch; info.torn_records is final.
  virtual void EndFile(const RingInfo& info) = 0;
};

// Keeps the header and comm table only; visit it from an index no writer reaches (UINT64_MAX) and
// no record is copied: a cheap look at a file before reading it (which job, which rank).
class RingHeaderCollector final : public RingVisitor {
 public:
  explicit RingHeaderCollector(RingInfo* out) : out_(out) {}
  void BeginFile(const RingInfo& info) override { *out_ = info; }
  void Records(const StoredRecord* /*batch*/, size_t /*n*/) override {}
  void EndFile(const RingInfo& /*info*/) override {}

 private:
  RingInfo* out_;
};

// Visits a ring image already in memory (a mapping, or a fuzzer's buffer). Returns false and sets
// *error ("<name>: <what is wrong>") when the header is invalid; the visitor then saw nothing.
bool VisitRing(const void* data, size_t size, const std::string& name, RingVisitor* visitor,
               std::string* error);

// Maps the file read-only with sequential read-ahead, visits it, and unmaps it before returning.
bool VisitRingFile(const std::string& path, RingVisitor* visitor, std::string* error);

// Incremental readers (the exporter): like the two above, but only the records from writer index
// `first` on (those older than the ring still holds are skipped too). RingInfo::overwritten stays
// the writer's count, so a reader learns whether records it never saw were overwritten.
bool VisitRingFrom(const void* data, size_t size, const std::string& name, uint64_t first,
                   RingVisitor* visitor, std::string* error);
bool VisitRingFileFrom(const std::string& path, uint64_t first, RingVisitor* visitor,
                       std::string* error);

}  // namespace ncclscope::trace
