#include "exporters/timeline/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ncclscope::exporters::timeline {

namespace {
constexpr size_t kBufferBytes = size_t{4} << 20;  // few large writes instead of many small ones
}

OutputFile::~OutputFile() {
  if (file_ != nullptr) {
    std::fclose(file_);
    ::unlink(partial_.c_str());
  }
}

bool OutputFile::Open(const std::string& path, std::string* error) {
  path_ = path;
  partial_ = path + ".partial";
  const int fd = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = partial_ + ": " + std::strerror(errno);
    return false;
  }
  file_ = ::fdopen(fd, "wb");
  if (file_ == nullptr) {
    *error = partial_ + ": " + std::strerror(errno);
    ::close(fd);
    ::unlink(partial_.c_str());
    return false;
  }
  std::setvbuf(file_, nullptr, _IOFBF, kBufferBytes);
  return true;
}

bool OutputFile::Commit(std::string* error) {
  if (file_ == nullptr) {
    *error = path_ + ": not open";
    return false;
  }
  // A write that failed earlier left the stream's error flag; fflush reports one failing now.
  const bool flushed = std::fflush(file_) == 0 && std::ferror(file_) == 0;
  const int write_errno = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed || !closed) {
    *error = partial_ + ": could not write the trace: " + std::strerror(write_errno);
    ::unlink(partial_.c_str());
    return false;
  }
  if (::rename(partial_.c_str(), path_.c_str()) != 0) {
    *error = path_ + ": " + std::strerror(errno);
    ::unlink(partial_.c_str());
    return false;
  }
  return true;
}

}  // namespace ncclscope::exporters::timeline
