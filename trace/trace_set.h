// All ring files of one job directory, read together. Thread-safe; the caller owns the result.
#pragma once

#include <string>
#include <vector>

#include "trace/ring_reader.h"

namespace ncclscope::trace {

struct TraceSet {
  std::vector<RingSnapshot> files;  // sorted by global rank (unknown ranks last), then pid
  std::vector<std::string> errors;  // one line per file that could not be read, naming it
  // The job its readers correlate when the files are of several jobs (job_choice.h); empty: the
  // newest heartbeat's. Set by the caller (analyze --job, the watchdog's own job), not read.
  std::string job;
};

// Reads every *.ring file in dir into *out, adding to what it holds (several directories, each
// node's of one job, read into one set stay in the order above). A damaged file does not stop the
// others; it is listed in errors. Returns false (and sets *error) only when the directory itself
// cannot be read.
bool ReadTraceDir(const std::string& dir, TraceSet* out, std::string* error);

}  // namespace ncclscope::trace
