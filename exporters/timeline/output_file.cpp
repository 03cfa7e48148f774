#include "exporters/timeline/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ncclscope::exporters::timeline {

OutputFile::~OutputFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(partial_.c_str());
  }
}

bool OutputFile::Open(const std::string& path, std::string* error) {
  path_ = path;
  partial_ = path + ".partial";
  fd_ = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    *error = partial_ + ": " + std::strerror(errno);
    return false;
  }
  buffer_.reserve(kFlushBytes + (size_t{1} << 16));
  return true;
}

void OutputFile::WriteOut(std::string_view bytes) {
  size_t done = 0;
  while (write_errno_ == 0 && done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      write_errno_ = errno;
    }
  }
}

bool OutputFile::Commit(std::string* error) {
  if (fd_ < 0) {
    *error = path_ + ": not open";
    return false;
  }
  Flush();
  const int close_errno = ::close(fd_) == 0 ? 0 : errno;
  fd_ = -1;
  const int failure = write_errno_ != 0 ? write_errno_ : close_errno;
  if (failure != 0) {
    *error = partial_ + ": could not write the trace: " + std::strerror(failure);
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
