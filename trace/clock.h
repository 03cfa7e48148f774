// Host clocks. Monotonic time stamps records; the (realtime, monotonic) pair in the file header
// converts them to wall time. clock_gettime goes through the vDSO: no system call on the hot path.
#pragma once

#include <cstdint>
#include <ctime>

namespace ncclscope::trace {

// Nanoseconds per second, for turning the clocks' readings into seconds.
inline constexpr double kNsPerS = 1e9;

inline int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

inline int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

}  // namespace ncclscope::trace
