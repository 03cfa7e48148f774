#include "tests/e2e/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>

namespace ncclscope::testing {

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& extra_env,
                         double timeout_seconds) {
  ProcessResult result;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) return result;
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // own process group, so a timeout kills the whole job
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    for (const auto& [k, v] : extra_env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {  // never kill(-pid) with pid -1: that signals every process we may signal
    close(out_pipe[0]);
    close(err_pipe[0]);
    return result;
  }
  // Killing the group and the child itself covers a child killed before its setpgid ran.
  auto kill_job = [&] {
    result.timed_out = true;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  };
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    if (elapsed() > timeout_seconds) {
      kill_job();
      break;
    }
    if (poll(fds, 2, 100) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
      char buf[65536];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  // A child may close its output and still run: the timeout holds until it exits.
  int status = 0;
  for (pid_t w; (w = waitpid(pid, &status, WNOHANG)) == 0 || (w < 0 && errno == EINTR);) {
    if (elapsed() > timeout_seconds && !result.timed_out) kill_job();
    usleep(result.timed_out ? 1000 : 10000);
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.seconds = elapsed();
  return result;
}

}  // namespace ncclscope::testing
