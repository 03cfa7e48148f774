// Splits a byte stream (a rank's stdout or stderr pipe) into lines and writes each whole line with
// a prefix, so the output of many ranks interleaves line by line, never mid-line.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

namespace ncclscope::sim {

// Not thread-safe; one per pipe. Borrows `out`.
class LinePrefixer {
 public:
  LinePrefixer(std::string prefix, std::ostream& out) : prefix_(std::move(prefix)), out_(&out) {}
  void feed(std::string_view bytes);
  // Writes a last line that had no newline (the process died mid-line).
  void finish();

 private:
  std::string prefix_;
  std::ostream* out_;
  std::string partial_;
};

}  // namespace ncclscope::sim
