// Reading what a job left behind (stderr logs, verdict files, the node lock's holder lines) in the
// watchdog's end-to-end tests.
#pragma once

#include <fstream>
#include <iterator>
#include <string>

namespace ncclscope::testing {

// The whole file; empty when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// How often `what` occurs in `text`, overlapping occurrences included.
inline int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace ncclscope::testing
