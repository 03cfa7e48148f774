#include "trace/trace_set.h"

#include <algorithm>
#include <climits>

namespace ncclscope::trace {

bool ReadTraceDir(const std::string& dir, TraceSet* out, std::string* error) {
  std::string list_error;
  std::vector<std::string> paths = ListRingFiles(dir, &list_error);
  if (!list_error.empty()) {
    *error = list_error;
    return false;
  }
  for (const std::string& path : paths) {
    std::string file_error;
    if (auto snapshot = ReadRingFile(path, &file_error)) {
      out->files.push_back(std::move(*snapshot));
    } else {
      out->errors.push_back(file_error);
    }
  }
  auto rank_key = [](const RingSnapshot& s) { return s.global_rank < 0 ? INT_MAX : s.global_rank; };
  std::stable_sort(out->files.begin(), out->files.end(),
                   [&](const RingSnapshot& a, const RingSnapshot& b) {
                     if (rank_key(a) != rank_key(b)) return rank_key(a) < rank_key(b);
                     return a.pid < b.pid;
                   });
  return true;
}

}  // namespace ncclscope::trace
