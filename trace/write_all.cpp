#include "trace/write_all.h"

#include <unistd.h>

#include <cerrno>

namespace ncclscope::trace {

bool WriteAll(int fd, const void* data, size_t size) noexcept {
  const auto* bytes = static_cast<const char*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = write(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) {
      errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace ncclscope::trace
