// A directory of PyTorch Flight Recorder dumps, one file per rank, found by what the files hold:
// users collect them from every node under whatever names their TORCH_NCCL_DEBUG_INFO_TEMP_FILE
// (TORCH_FR_DUMP_TEMP_FILE) prefix gave, "<prefix><global rank>" (DebugInfoWriter
// in torch/csrc/distributed/c10d/FlightRecorder.cpp), so the name's last run of digits is the rank
// and the rest is not trusted to mean anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "trace/flight_recorder/fr_dump.h"

namespace ncclscope::flight_recorder {

enum class FrFormat { kNone, kPickle, kJson };
// What the first bytes of a file say: a pickle (PROTO 2 or later, as torch's Pickler and CPython
// write) or a JSON object (_dump_nccl_trace_json). Pure.
FrFormat SniffFrDump(const char* data, size_t size);

struct FrDumpFile {
  std::string path;
  int rank = -1;
  int64_t mtime_ns = 0;  // when the rank wrote it: its last sign of life
  FrFormat format = FrFormat::kNone;
};

struct FrDumpListing {
  std::vector<FrDumpFile> dumps;  // by rank
  // Files that look like dumps but cannot be used as one (no rank in the name, a second file for
  // a rank), one line each naming the file.
  std::vector<std::string> skipped;
};

// The dumps of `dir` (ring files, hidden files, the watchdog's verdict.json and anything that is
// not a regular file are not looked into). False with *error only when the directory cannot be
// listed. Thread-safe.
bool ListFrDumps(const std::string& dir, FrDumpListing* out, std::string* error);

// Reads and decodes one dump, pickle or JSON by content; false with *error ("<path>: <what>")
// for anything else, including a version outside 2.2 to 2.x. Bounded like the pickle reader.
// Thread-safe.
bool ReadFrDumpFile(const std::string& path, FrDump* out, std::string* error);

}  // namespace ncclscope::flight_recorder
