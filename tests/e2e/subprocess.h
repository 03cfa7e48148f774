// Runs a program to completion with extra environment, capturing its output, bounded by a timeout.
// Thread-compatible: one call per thread at a time.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ncclscope::testing {

struct ProcessResult {
  int exit_code = -1;  // exit status, or 128 + signal
  bool timed_out = false;
  std::string out;
  std::string err;
  double seconds = 0;
};

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& extra_env = {},
                         double timeout_seconds = 120);

}  // namespace ncclscope::testing
