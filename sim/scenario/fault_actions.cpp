#include "sim/scenario/fault_actions.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>

namespace ncclscope::sim {
namespace {

void neverReturn(void*) {
  for (;;) pause();
}

}  // namespace

void logLine(const std::string& line) {
  const std::string text = "ncclscope-sim-rank: " + line + "\n";
  // One write keeps lines of different threads whole in the launcher's prefixed output.
  [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, text.data(), text.size());
}

void blockForever(const std::string& why) {
  logLine("injecting " + why + ": this thread blocks forever");
  neverReturn(nullptr);
  __builtin_unreachable();
}

void crashNow(CrashMode mode, const std::string& why) {
  logLine("injecting " + why);
  switch (mode) {
    case CrashMode::kSigkill:
      raise(SIGKILL);
      break;
    case CrashMode::kAbort:
      std::abort();
    case CrashMode::kSegfault: {
      // A volatile store through a pointer the compiler cannot see is null: it must be emitted,
      // and it faults like a real bug would (not a trap instruction or a raised signal).
      volatile int* volatile p = nullptr;
      *p = 1;
      break;
    }
  }
  std::_Exit(127);  // unreachable unless a signal was ignored; still never returns
}

void freezeNow(const std::string& why) {
  logLine("injecting " + why + ": SIGSTOP");
  raise(SIGSTOP);
}

void exitEarly(const std::string& why) {
  logLine("injecting " + why + ": exit(0) without destroying communicators");
  std::exit(0);
}

CUresult blockStream(CUstream stream, const std::string& why) {
  logLine("injecting " + why + ": the stream gets a host function that never returns");
  return cuLaunchHostFunc(stream, neverReturn, nullptr);
}

}  // namespace ncclscope::sim
