// The clock of every timestamp the probe writes (call entry and exit, device completion, heartbeat,
// communicator creation), so one ring is one time domain. It is CLOCK_MONOTONIC: read as rdtsc
// through a calibrated curve (tsc_curve.h) where the CPU has an invariant TSC and the kernel itself
// uses the TSC as its clocksource, else, and until the first calibration, clock_gettime.
// The curve stays within microseconds of CLOCK_MONOTONIC (readers in other processes compare
// heartbeats with it) and never goes back.
#pragma once

#include <atomic>
#include <cstdint>

#include "plugin/core/tsc_curve.h"
#include "trace/clock.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace ncclscope::plugin {

// The published curve, a seqlock in its "latch" form: two copies, and seq & 1 says which one
// readers use while the writer rewrites the other. Readers never wait for the writer and never
// write; a reader that sees seq change during its read simply reads again. seq only grows. A curve
// whose applicable slope is 0 (all zero before the first calibration) means "use clock_gettime".
struct PublishedTscCurve {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint64_t> words[2][6] = {};  // a TscCurve per copy: before, then after
};
extern PublishedTscCurve g_tsc_curve __attribute__((visibility("hidden")));

// Now, in ns of CLOCK_MONOTONIC. Hot path: no lock, no system call (clock_gettime is a vDSO call),
// no RMW atomic. Thread-safe, async-signal-safe.
inline int64_t ProbeNowNs() noexcept {
#if defined(__x86_64__)
  for (;;) {
    const uint32_t seq = g_tsc_curve.seq.load(std::memory_order_acquire);
    const std::atomic<uint64_t>* w = g_tsc_curve.words[seq & 1];
    const uint64_t tsc = __rdtsc();
    // Only the segment that applies is read: `after` from the switch tick (w[3]) on.
    const int k = tsc >= w[3].load(std::memory_order_relaxed) ? 3 : 0;
    const TscSegment s{w[k].load(std::memory_order_relaxed),
                       static_cast<int64_t>(w[k + 1].load(std::memory_order_relaxed)),
                       w[k + 2].load(std::memory_order_relaxed)};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (__builtin_expect(g_tsc_curve.seq.load(std::memory_order_relaxed) != seq, 0)) continue;
    if (__builtin_expect(s.mult == 0, 0)) return trace::MonotonicNs();
    return SegmentNs(s, tsc);
  }
#else
  return trace::MonotonicNs();
#endif
}

// Samples and publishes a new curve when one is due (first calibration, periodic refresh); cheap
// otherwise. Checks once whether the fast clock may be used at all (CPU, clocksource). Call from
// the background thread only (one caller at a time); may read files and the clock.
void RefreshProbeClock(const CalibrationOptions& options = {}) noexcept;

// Whether the fast clock currently reads the TSC (false: clock_gettime). Thread-safe.
bool ProbeClockUsesTsc() noexcept;

// Back to clock_gettime and an uncalibrated state; for the fork child (whose background thread is
// gone, and which may have been forked in the middle of a publication). Single-threaded callers.
void ResetProbeClockAfterFork() noexcept;

// Whether a CPU and kernel qualify for the fast clock: invariant TSC (CPUID 0x80000007 EDX bit 8)
// and current_clocksource (the contents of the sysfs file) "tsc". Pure.
bool TscClockUsable(bool invariant_tsc, const char* clocksource) noexcept;

}  // namespace ncclscope::plugin
