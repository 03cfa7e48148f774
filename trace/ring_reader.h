// Reads ring files, also while their writers run, and rejects truncated or corrupt ones with an
// error that names the file and what is wrong. Functions are thread-safe; results are owned by the
// caller.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/ring_visitor.h"

namespace ncclscope::trace {

// A whole file in memory: header, comm table and every record. Fine for one file or a small job;
// a large job is read through the streaming VisitRingFile (ring_visitor.h) instead.
struct RingSnapshot : RingInfo {
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
