// The file a timeline is written to: created 0600 (it names hosts, ranks and communicators) as
// "<path>.partial", renamed to <path> only when everything was written, so a failed or interrupted
// run never leaves a truncated trace under the name asked for. Writes go through one large buffer
// of its own (a trace is millions of small pieces). Not thread-safe.
#pragma once

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
    buffer_.append(bytes.data(), bytes.size());
    if (buffer_.size() >= kFlushBytes) Flush();
  }
  // The same for a large piece (a rank's part of the trace): written as it is, without passing
  // through the buffer.
  void WriteLarge(std::string_view bytes) {
    Flush();
    WriteOut(bytes);
  }
  // Flushes, closes and renames into place; false with *error naming the file and the cause.
  bool Commit(std::string* error);

 private:
  static constexpr size_t kFlushBytes = size_t{4} << 20;
  void Flush() {
    WriteOut(buffer_);
    buffer_.clear();
  }
  void WriteOut(std::string_view bytes);  // remembers the first failure for Commit

  std::string path_;
  std::string partial_;
  int fd_ = -1;
  std::string buffer_;
  int write_errno_ = 0;
};

}  // namespace ncclscope::exporters::timeline
