#include "collectives/gpu_check/pipes.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include "collectives/twins/bounded_wait.h"

namespace ncclscope::gpu_check {

bool ReadFull(int fd, void* buf, size_t bytes, int64_t deadline_ns) {
  auto* p = static_cast<unsigned char*>(buf);
  while (bytes > 0) {
    const int64_t left_ms = (deadline_ns - collectives::MonotonicNs()) / 1000000;
    if (left_ms <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left_ms > 1000 ? 1000 : left_ms));
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    const ssize_t n = read(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool WriteFull(int fd, const void* buf, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(buf);
  while (bytes > 0) {
    const ssize_t n = write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace ncclscope::gpu_check
