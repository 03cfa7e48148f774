// Waiting without burning a core: tests run up to 32 ranks on 2 cores, so a blocked rank must
// sleep. Spins briefly (cheap when the peer is about to answer), then sleeps with exponential
// backoff capped at 1 ms.
#pragma once

#include <cstdint>
#include <ctime>

namespace ncclsim {

// CLOCK_MONOTONIC in nanoseconds: one clock shared by all processes of the machine, so time stamps
// written into shared memory by one rank can be compared by another.
inline uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

inline void sleepNs(uint64_t ns) {
  timespec ts{time_t(ns / 1000000000ull), long(ns % 1000000000ull)};
  nanosleep(&ts, nullptr);
}

// One waiter's backoff state. Not thread-safe: one per waiting loop.
class Backoff {
 public:
  static constexpr int kSpins = 50;
  static constexpr uint64_t kMaxSleepNs = 1000000;

  // Call when the awaited condition was false. `wake_at_ns` (0 = none) caps the sleep when the
  // caller knows when the condition becomes true.
  void pause(uint64_t wake_at_ns = 0) {
    if (spins_ < kSpins) {
      ++spins_;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      return;
    }
    uint64_t ns = sleep_ns_;
    if (wake_at_ns != 0) {
      uint64_t now = nowNs();
      uint64_t until = wake_at_ns > now ? wake_at_ns - now : 0;
      if (until < ns) ns = until;
    }
    if (ns > 0) sleepNs(ns);
    sleep_ns_ = sleep_ns_ * 2 > kMaxSleepNs ? kMaxSleepNs : sleep_ns_ * 2;
  }

  // Call when progress was made, so the next wait starts with cheap spins again.
  void reset() {
    spins_ = 0;
    sleep_ns_ = 2000;
  }

 private:
  int spins_ = 0;
  uint64_t sleep_ns_ = 2000;
};

}  // namespace ncclsim
