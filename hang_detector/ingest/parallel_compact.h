// Compacting many trace files into RankFiles on a few threads, the one loop behind every way a
// job is read (ring files of a directory, Flight Recorder dumps, any RingSource). Files are
// independent, so each worker takes the next one until none is left.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "hang_detector/ingest/rank_file.h"

namespace ncclscope::hang_detector {

struct CompactedFiles {
  std::vector<RankFile> readable;   // in the order of the files' numbers
  std::vector<std::string> errors;  // one line per file that could not be read, same order
  int threads = 1;                  // threads used: at most the files' count, at least one
};

// Calls visit(i, builder, error) for every i < count, on up to `threads` threads (this one
// included); visit streams file i into the builder and returns whether it could be read, else
// sets *error. visit must be safe to call concurrently for different i.
CompactedFiles CompactInParallel(
    size_t count, int threads,
    const std::function<bool(size_t i, RankFileBuilder* builder, std::string* error)>& visit);

}  // namespace ncclscope::hang_detector
