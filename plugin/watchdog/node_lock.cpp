#include "plugin/watchdog/node_lock.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "trace/clock.h"

namespace ncclscope::plugin {
namespace {

constexpr off_t kMaxLogBytes = off_t{64} * 1024;

// The descriptor a fork must not hand on (one watchdog per process holds the lock at most).
std::atomic<int> g_held_fd{-1};

void CloseInChild() {
  // Closing the child's duplicate drops only its reference to the open file description: the
  // parent keeps the lock, and its death alone releases it.
  const int fd = g_held_fd.exchange(-1);
  if (fd >= 0) close(fd);
}

void InstallForkHandler() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, CloseInChild); });
}

}  // namespace

NodeLock::Result NodeLock::TryAcquire(const std::string& path, int rank, std::string* error) {
  if (fd_ >= 0 && owner_pid_ == static_cast<int>(getpid())) return Result::kHeld;
  fd_ = -1;  // a forked child's stale number (see Release)
  InstallForkHandler();
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    *error = path + ": " + std::strerror(errno);
    return Result::kNoLock;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    close(fd);
    if (e == EWOULDBLOCK) return Result::kOther;
    *error = path + ": flock: " + std::strerror(e);
    return Result::kNoLock;
  }
  struct stat st {};
  if (fstat(fd, &st) == 0 && st.st_size > kMaxLogBytes && ftruncate(fd, 0) != 0) {
    // The log only informs; an untruncated one is still a valid lock.
  }
  char line[96];
  const int n = std::snprintf(line, sizeof line, "%d %d %lld\n", static_cast<int>(getpid()), rank,
                              static_cast<long long>(trace::RealtimeNs()));
  if (write(fd, line, static_cast<size_t>(n)) < 0) {
    // As above: the lock is the flock, not the line.
  }
  fd_ = fd;
  owner_pid_ = static_cast<int>(getpid());
  g_held_fd.store(fd);
  return Result::kHeld;
}

void NodeLock::Release() {
  if (fd_ < 0) return;
  if (owner_pid_ != static_cast<int>(getpid())) {
    fd_ = -1;
    return;
  }
  int expected = fd_;
  g_held_fd.compare_exchange_strong(expected, -1);
  // Closing the last descriptor of the open file description releases the flock.
  close(fd_);
  fd_ = -1;
}

}  // namespace ncclscope::plugin
