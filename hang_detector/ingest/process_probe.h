// Whether a writer process still exists, behind an interface so tests fake it. Only meaningful for
// ring files written on this host (a pid means nothing on another machine).
#pragma once

#include <memory>
#include <string>

namespace ncclscope::hang_detector {

enum class ProcessState : uint8_t {
  kUnknown,  // cannot tell (permission, other host)
  kRunning,  // exists and is not stopped
  kStopped,  // exists, stopped (SIGSTOP, traced): makes no progress
  kGone,     // no such process, or a zombie waiting to be reaped
};

// What a live process is doing, as far as one look at /proc tells.
struct ProcessActivity {
  char state = 0;     // its main thread's scheduler state (R, S, D, ...); 0 when unknown
  double cpu_s = -1;  // CPU time of all its threads so far; -1 when unknown
};

class ProcessProbe {
 public:
  virtual ~ProcessProbe() = default;
  // The host name ring files of this machine carry (RingSnapshot::host).
  virtual std::string ThisHost() const = 0;
  // Thread-safety is the implementation's; the Linux one is thread-safe.
  virtual ProcessState State(int pid) const = 0;
  // Only for describing a culprit; no verdict depends on it. Unknown by default.
  virtual ProcessActivity Activity(int /*pid*/) const { return {}; }
};

// kill(pid, 0) and /proc/<pid>/stat. Thread-safe. Pid reuse is not detected: a recycled pid reads
// as running, which errs towards "frozen" rather than a false "dead".
std::unique_ptr<ProcessProbe> MakeLinuxProcessProbe();

}  // namespace ncclscope::hang_detector
