// Warning lines on stderr ("ncclscope: warning: ..."), at most one per failure.
#pragma once

namespace ncclscope::plugin {

// Failures that warn once per process (per fork generation for the recording ones).
enum class WarnKey : int {
  kNcclMissing,
  kConfig,
  kRingCreate,
  kInit,
  kCudaDriver,
  kPoller,
  kCommTableFull,
  kInternal,
  kWatchdog,
  kAccel,
  kNumerics,
  kCount,
};

// Prints one line unless warnings are off (NCCLSCOPE_WARN=0). Keeps errno. Thread-safe; writes
// with one write(2) so lines of concurrent threads do not interleave.
void Warn(const char* format, ...) __attribute__((format(printf, 1, 2)));

// As Warn, but only the first call for key prints. Thread-safe, lock-free.
void WarnOnce(WarnKey key, const char* format, ...) __attribute__((format(printf, 2, 3)));

// Set from the parsed configuration; before that, NCCLSCOPE_WARN is read directly. Thread-safe.
void SetWarningsEnabled(bool enabled);

// Lets a forked child warn again about the parts it re-initializes. Call only in the child.
void ResetWarnOnceAfterFork();

}  // namespace ncclscope::plugin
