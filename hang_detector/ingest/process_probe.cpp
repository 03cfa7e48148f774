#include "hang_detector/ingest/process_probe.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "trace/job_layout.h"

namespace ncclscope::hang_detector {
namespace {

// The fields after "(comm) ", from the state letter on: comm may itself hold spaces and
// parentheses, so look for the last ')'. False when the process or its stat is gone.
bool StatFields(int pid, char* buf, size_t size, const char** fields) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* close_paren = std::strrchr(buf, ')');
  if (close_paren == nullptr || close_paren[1] != ' ') return false;
  *fields = close_paren + 2;
  return true;
}

char StatState(int pid) {
  char buf[512];
  const char* fields = nullptr;
  return StatFields(pid, buf, sizeof buf, &fields) ? fields[0] : 0;
}

ProcessActivity StatActivity(int pid) {
  char buf[512];
  const char* fields = nullptr;
  ProcessActivity a;
  if (!StatFields(pid, buf, sizeof buf, &fields)) return a;
  a.state = fields[0];
  // Fields 3 (state) to 15 (stime) of proc(5): utime and stime are the 12th and 13th from here.
  unsigned long long utime = 0, stime = 0;
  if (std::sscanf(fields, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                  &stime) == 2) {
    const long ticks = sysconf(_SC_CLK_TCK);
    if (ticks > 0) a.cpu_s = static_cast<double>(utime + stime) / static_cast<double>(ticks);
  }
  return a;
}

class LinuxProcessProbe final : public ProcessProbe {
 public:
  // What this host's ring writers put in their headers: NCCLSCOPE_HOST when set (simulated nodes,
  // pods named apart from their node), else the host name. Read once: the environment may change
  // under a long-lived probe (the in-process watchdog), the files' names do not.
  LinuxProcessProbe()
      : host_(trace::ThisHostName(
            [](const char* name) -> const char* { return std::getenv(name); })) {}

  std::string ThisHost() const override { return host_; }

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

  ProcessActivity Activity(int pid) const override {
    return pid > 0 ? StatActivity(pid) : ProcessActivity{};
  }

 private:
  std::string host_;
};

}  // namespace

std::unique_ptr<ProcessProbe> MakeLinuxProcessProbe() {
  return std::make_unique<LinuxProcessProbe>();
}

}  // namespace ncclscope::hang_detector
