#include "sim/scenario/rank_bootstrap.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace ncclscope::sim {

std::string uniqueIdPath(const std::string& run_dir, const std::string& job_tag) {
  return fmt::format("{}/ncclsim-{}.uniqueid", run_dir, job_tag);
}

bool publishUniqueId(const std::string& path, const ncclUniqueId& id, std::string& error) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = fmt::format("cannot create {}: {}", tmp, std::strerror(errno));
    return false;
  }
  const ssize_t n = write(fd, &id, sizeof id);
  const int write_errno = errno;
  close(fd);
  if (n != static_cast<ssize_t>(sizeof id)) {
    error =
        fmt::format("cannot write {}: {}", tmp, n < 0 ? std::strerror(write_errno) : "short write");
    unlink(tmp.c_str());
    return false;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    error = fmt::format("cannot rename {} to {}: {}", tmp, path, std::strerror(errno));
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

bool waitUniqueId(const std::string& path, double timeout_s, ncclUniqueId& id, std::string& error) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      const ssize_t n = read(fd, &id, sizeof id);
      close(fd);
      if (n == static_cast<ssize_t>(sizeof id)) return true;
    }
    if (Clock::now() >= deadline) {
      error = fmt::format("no unique id at {} after {} s (rank 0 publishes it; did it start?)",
                          path, timeout_s);
      return false;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

}  // namespace ncclscope::sim
