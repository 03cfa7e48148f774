#include "hang_detector/process_probe.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ncclscope::hang_detector {
namespace {

// The state letter follows "(comm) ": comm may itself hold spaces and parentheses, so look for
// the last ')'.
char StatState(int pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[512];
  const ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* close_paren = std::strrchr(buf, ')');
  if (close_paren == nullptr || close_paren[1] != ' ') return 0;
  return close_paren[2];
}

class LinuxProcessProbe final : public ProcessProbe {
 public:
  std::string ThisHost() const override {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) != 0) return {};
    return host;
  }

  ProcessState State(int pid) const override {
    if (pid <= 0) return ProcessState::kUnknown;
    if (kill(pid, 0) != 0) return errno == ESRCH ? ProcessState::kGone : ProcessState::kUnknown;
    switch (StatState(pid)) {
      case 'T':
      case 't':
        return ProcessState::kStopped;
      case 'Z':
      case 'X':
        return ProcessState::kGone;  // dead, not yet reaped by its launcher
      case 0:
        return ProcessState::kUnknown;
      default:
        return ProcessState::kRunning;
    }
  }
};

}  // namespace

std::unique_ptr<ProcessProbe> MakeLinuxProcessProbe() {
  return std::make_unique<LinuxProcessProbe>();
}

}  // namespace ncclscope::hang_detector
