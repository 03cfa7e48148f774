#include "sim/scenario/rank_processes.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>

namespace ncclscope::sim {
namespace {

std::vector<char*> cStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const std::string& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string signalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

RankProcesses::~RankProcesses() {
  for (RankOutcome& r : ranks_) {
    if (r.running) kill(r.pid, SIGKILL);
  }
  reap(true);
  for (Pipe& p : pipes_) {
    if (p.fd >= 0) close(p.fd);
  }
}

bool RankProcesses::start(const std::vector<std::vector<std::string>>& argv,
                          const std::vector<std::vector<std::string>>& env, std::string& error) {
  for (size_t r = 0; r < argv.size(); ++r) {
    int out_pipe[2];
    int err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) {
      error = fmt::format("pipe: {}", strerror(errno));
      return false;
    }
    if (pipe2(err_pipe, O_CLOEXEC) != 0) {
      error = fmt::format("pipe: {}", strerror(errno));
      close(out_pipe[0]);
      close(out_pipe[1]);
      return false;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
    auto args = cStrings(argv[r]);
    auto envp = cStrings(env[r]);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(out_pipe[1]);
    close(err_pipe[1]);
    const std::string prefix = fmt::format("[rank {}] ", r);
    for (int fd : {out_pipe[0], err_pipe[0]}) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      pipes_.push_back(
          {fd, std::make_unique<LinePrefixer>(prefix, fd == out_pipe[0] ? out_ : err_)});
    }
    if (rc != 0) {
      error = fmt::format("cannot start {}: {}", args[0], strerror(rc));
      return false;
    }
    ranks_.push_back({pid, true, -1, 0, false});
  }
  return true;
}

void RankProcesses::pump(int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<size_t> which;
  for (size_t i = 0; i < pipes_.size(); ++i) {
    if (pipes_[i].fd < 0) continue;
    fds.push_back({pipes_[i].fd, POLLIN, 0});
    which.push_back(i);
  }
  if (fds.empty()) {
    if (timeout_ms > 0) poll(nullptr, 0, timeout_ms);
    return;
  }
  if (poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
  char buf[4096];
  for (size_t k = 0; k < fds.size(); ++k) {
    if (fds[k].revents == 0) continue;
    Pipe& p = pipes_[which[k]];
    const ssize_t n = read(p.fd, buf, sizeof buf);
    if (n > 0) {
      p.lines->feed(std::string_view(buf, static_cast<size_t>(n)));
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      p.lines->finish();
      close(p.fd);
      p.fd = -1;
    }
  }
}

void RankProcesses::reap(bool block) {
  for (RankOutcome& r : ranks_) {
    if (!r.running) continue;
    int status = 0;
    const pid_t got = waitpid(r.pid, &status, block ? 0 : WNOHANG);
    if (got != r.pid) continue;
    r.running = false;
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  }
}

void RankProcesses::drain() {
  // Every writer is gone once the ranks are reaped, so each pipe reaches end of file; bounded in
  // case a rank left a grandchild holding it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (bool open = true; open && std::chrono::steady_clock::now() < deadline;) {
    pump(50);
    open = false;
    for (const Pipe& p : pipes_) open = open || p.fd >= 0;
  }
  for (Pipe& p : pipes_) {
    if (p.fd < 0) continue;
    p.lines->finish();
    close(p.fd);
    p.fd = -1;
  }
}

bool RankProcesses::anyFailed() const {
  for (const RankOutcome& r : ranks_) {
    if (!r.running && (r.signal != 0 || r.exit_code > 0)) return true;
  }
  return false;
}

bool RankProcesses::anyRunning() const {
  for (const RankOutcome& r : ranks_) {
    if (r.running) return true;
  }
  return false;
}

std::vector<int> RankProcesses::wait(double timeout_s, bool fail_fast) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  std::vector<int> late;
  while (anyRunning()) {
    pump(20);
    reap(false);
    if (fail_fast && anyFailed()) {
      for (RankOutcome& r : ranks_) {
        if (r.running) kill(r.pid, SIGKILL);
      }
      reap(true);
    }
    if (timeout_s > 0 && Clock::now() >= deadline && anyRunning()) {
      for (size_t r = 0; r < ranks_.size(); ++r) {
        if (!ranks_[r].running) continue;
        late.push_back(static_cast<int>(r));
        ranks_[r].timed_out = true;
        kill(ranks_[r].pid, SIGKILL);  // SIGKILL also ends a SIGSTOPped process
      }
      reap(true);
    }
  }
  drain();
  return late;
}

}  // namespace ncclscope::sim
