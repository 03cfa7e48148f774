// The file a timeline is written to: created 0600 (it names hosts, ranks and communicators) as
// "<path>.partial", renamed to <path> only when everything was written, so a failed or interrupted
// run never leaves a truncated trace under the name asked for. Not thread-safe.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace ncclscope::exporters::timeline {

class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile();  // removes the partial file when Commit was never reached
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  bool Open(const std::string& path, std::string* error);
  void Write(std::string_view bytes) {
    if (file_ != nullptr && !bytes.empty()) std::fwrite(bytes.data(), 1, bytes.size(), file_);
  }
  // Flushes, closes and renames into place; false with *error naming the file and the cause.
  bool Commit(std::string* error);

 private:
  std::string path_;
  std::string partial_;
  std::FILE* file_ = nullptr;
};

}  // namespace ncclscope::exporters::timeline
