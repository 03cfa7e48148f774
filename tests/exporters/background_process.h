// A program that runs while the test does (an exporter, `ncclscope run` with its exporter), its
// stderr kept in a file the test reads as it grows. Stopped with SIGTERM (then SIGKILL) when the
// object goes. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace ncclscope::testing {

class BackgroundProcess {
 public:
  // Starts argv with stderr (and stdout) appended to stderr_path.
  BackgroundProcess(const std::vector<std::string>& argv, std::string stderr_path);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  // What it printed so far.
  std::string Output() const;
  // Waits up to timeout_s for "port N" in its output (the exporter's first line); -1 if none.
  int WaitForPort(double timeout_s) const;
  // Waits up to timeout_s for it to exit; its exit code (128 + signal), or -1 if it still runs.
  int Wait(double timeout_s);
  // SIGTERM, then waits up to timeout_s; the exit code as Wait.
  int Stop(double timeout_s);
  // Sends `sig` to it alone (not its process group); false once it has ended or was never started.
  bool Signal(int sig);

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
  std::string stderr_path_;
};

}  // namespace ncclscope::testing
