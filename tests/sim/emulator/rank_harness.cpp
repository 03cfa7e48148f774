#include "tests/sim/emulator/rank_harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace ncclsim_test {

namespace {

int g_report_fd = -1;
int g_run_counter = 0;

uint64_t monoMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
}

void removeShm(const std::string& prefix) {
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) {
      std::string name = "/" + std::string(e->d_name);
      shm_unlink(name.c_str());
    }
  }
  closedir(d);
}

std::string drain(int fd) {
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) s.append(buf, size_t(n));
  return s;
}

}  // namespace

void rankReport(const char* fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(line, sizeof(line) - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = std::strlen(line);
  line[len++] = '\n';
  if (g_report_fd >= 0 && write(g_report_fd, line, len) < 0) return;
}

std::vector<RankOutcome> runRanks(int nranks, const RankFn& fn, int timeout_ms) {
  std::string tag = "t" + std::to_string(getpid()) + "x" + std::to_string(++g_run_counter);
  setenv("NCCLSIM_JOB_TAG", tag.c_str(), 1);
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  std::vector<pid_t> pids(static_cast<size_t>(nranks));
  std::vector<int> fds(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    int p[2];
    if (pipe(p) != 0) std::abort();
    pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      g_report_fd = p[1];
      int code = fn(r, nranks, id);
      _exit(code);  // skip exit-time drains and atexit handlers of the test binary
    }
    close(p[1]);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    pids[size_t(r)] = pid;
    fds[size_t(r)] = p[0];
  }
  std::vector<RankOutcome> out(static_cast<size_t>(nranks));
  std::vector<bool> reaped(static_cast<size_t>(nranks), false);
  uint64_t deadline = monoMs() + uint64_t(timeout_ms);
  int left = nranks;
  while (left > 0) {
    for (int r = 0; r < nranks; ++r) {
      if (reaped[size_t(r)]) continue;
      out[size_t(r)].report += drain(fds[size_t(r)]);
      int status = 0;
      if (waitpid(pids[size_t(r)], &status, WNOHANG) == pids[size_t(r)]) {
        reaped[size_t(r)] = true;
        --left;
        out[size_t(r)].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
    }
    if (left == 0) break;
    if (monoMs() >= deadline) {
      for (int r = 0; r < nranks; ++r) {
        if (reaped[size_t(r)]) continue;
        kill(pids[size_t(r)], SIGKILL);
        waitpid(pids[size_t(r)], nullptr, 0);
        out[size_t(r)].timed_out = true;
      }
      break;
    }
    usleep(2000);
  }
  for (int r = 0; r < nranks; ++r) {
    out[size_t(r)].report += drain(fds[size_t(r)]);
    close(fds[size_t(r)]);
  }
  removeShm("ncclsim-" + tag + "-");
  return out;
}

std::string describeFailures(const std::vector<RankOutcome>& out) {
  std::string s;
  for (size_t r = 0; r < out.size(); ++r) {
    const RankOutcome& o = out[r];
    if (!o.timed_out && o.exit_code == 0) continue;
    s += "rank " + std::to_string(r) +
         (o.timed_out ? ": timed out" : ": exit code " + std::to_string(o.exit_code));
    s += o.report.empty() ? "\n" : ":\n";
    // The first lines name the rank, op, dtype and offset; the rest would only bury them.
    size_t pos = 0;
    for (int line = 0; line < 8 && pos < o.report.size(); ++line) {
      size_t end = o.report.find('\n', pos);
      end = end == std::string::npos ? o.report.size() : end + 1;
      s += o.report.substr(pos, end - pos);
      pos = end;
    }
  }
  return s;
}

void runInOneRank(int (*body)()) {
  expectAllPass(runRanks(
      1, [body](int, int, const ncclUniqueId&) { return body(); }, 20000));
}

void expectAllPass(const std::vector<RankOutcome>& out) {
  const std::string failures = describeFailures(out);
  EXPECT_TRUE(failures.empty()) << failures;
}

}  // namespace ncclsim_test
