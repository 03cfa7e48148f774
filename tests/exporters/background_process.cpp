#include "tests/exporters/background_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace ncclscope::testing {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv, std::string stderr_path)
    : stderr_path_(std::move(stderr_path)) {
  const int fd = open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fd);
}

BackgroundProcess::~BackgroundProcess() {
  if (Stop(10) < 0 && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::string BackgroundProcess::Output() const {
  std::ifstream in(stderr_path_);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

int BackgroundProcess::WaitForPort(double timeout_s) const {
  static const std::regex kPort("port ([0-9]+)");
  const auto start = Clock::now();
  do {
    std::smatch m;
    const std::string out = Output();
    if (std::regex_search(out, m, kPort)) return std::stoi(m[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (Since(start) < timeout_s);
  return -1;
}

int BackgroundProcess::Wait(double timeout_s) {
  if (pid_ <= 0 || exit_code_ >= 0) return exit_code_;
  const auto start = Clock::now();
  do {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (Since(start) < timeout_s);
  return -1;
}

bool BackgroundProcess::Signal(int sig) {
  return pid_ > 0 && exit_code_ < 0 && kill(pid_, sig) == 0;
}

int BackgroundProcess::Stop(double timeout_s) {
  if (pid_ > 0 && exit_code_ < 0) kill(pid_, SIGTERM);
  return Wait(timeout_s);
}

}  // namespace ncclscope::testing
