// Reads ring files, also while their writers run, and rejects truncated or corrupt ones with an
// error that names the file and what is wrong. Functions are thread-safe; results are owned by the
// caller.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/comm_info.h"
#include "trace/record.h"

namespace ncclscope::trace {

struct StoredRecord {
  uint64_t index;  // position in the writer's stream of records, 0-based, survives wrapping
  RecordData data;
};

struct RingSnapshot {
  std::string path;
  uint32_t format_version = 0;
  int pid = -1;
  int global_rank = -1;
  int local_rank = -1;
  int world_size = -1;
  std::string host;
  std::string job_id;
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
  std::vector<CommInfo> comms;
  std::vector<StoredRecord> records;  // oldest first
};

// Reads a whole file. Returns nullopt and sets *error ("<path>: <what is wrong>") on failure.
std::optional<RingSnapshot> ReadRingFile(const std::string& path, std::string* error);

// Parses a ring image already in memory (used by ReadRingFile and by the fuzz target).
std::optional<RingSnapshot> ParseRing(const void* data, size_t size, const std::string& name,
                                      std::string* error);

// The *.ring files of a directory, sorted. Sets *error when the directory cannot be read.
std::vector<std::string> ListRingFiles(const std::string& dir, std::string* error);

}  // namespace ncclscope::trace
