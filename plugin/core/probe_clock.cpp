#include "plugin/core/probe_clock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace ncclscope::plugin {

PublishedTscCurve g_tsc_curve;

namespace {

// State of the one writer (the background thread).
enum class Support { kUnknown, kYes, kNo };
Support g_support = Support::kUnknown;
TscCalibrator g_calibrator;

bool InvariantTsc() noexcept {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  // GCC's cpuid.h returns unsigned, clang's int: compare as unsigned for both.
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000, nullptr)) < 0x80000007u) return false;
  if (__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}

// The kernel's clocksource: CLOCK_MONOTONIC is the TSC scaled only when this says "tsc"; with any
// other source (kvm-clock, hpet) a straight line through TSC samples may wander off it.
bool ReadClocksource(char* buf, size_t cap) noexcept {
  const int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                      O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  return true;
}

#if defined(__x86_64__)
// The pair with the tightest bracket of a few tries; the tick is the bracket's start, so the
// monotonic time was read no earlier than it (see TscSample).
TscSample TakeTscSample() noexcept {
  TscSample best{0, 0};
  uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const uint64_t t0 = __rdtsc();
    const int64_t ns = trace::MonotonicNs();
    const uint64_t t1 = __rdtsc();
    if (t1 >= t0 && t1 - t0 < best_width) {
      best_width = t1 - t0;
      best = TscSample{t0, ns};
    }
  }
  return best;
}
#endif

void Publish(const TscCurve& c) noexcept {
  const uint64_t words[6] = {
      c.before.base_tsc, static_cast<uint64_t>(c.before.base_ns), c.before.mult,
      c.after.base_tsc,  static_cast<uint64_t>(c.after.base_ns),  c.after.mult};
  auto write_copy = [&](int copy) {
    for (int i = 0; i < 6; ++i)
      g_tsc_curve.words[copy][i].store(words[i], std::memory_order_relaxed);
  };
  uint32_t seq = g_tsc_curve.seq.load(std::memory_order_relaxed);
  // seq is even: readers use copy 0. Move them to copy 1, rewrite 0, move them back, rewrite 1.
  g_tsc_curve.seq.store(++seq, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_release);
  write_copy(0);
  g_tsc_curve.seq.store(++seq, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_release);
  write_copy(1);
}

}  // namespace

bool TscClockUsable(bool invariant_tsc, const char* clocksource) noexcept {
  if (!invariant_tsc || clocksource == nullptr) return false;
  const size_t n = std::strlen(clocksource);
  return n >= 3 && std::strncmp(clocksource, "tsc", 3) == 0 && (n == 3 || clocksource[3] == '\n');
}

void RefreshProbeClock(const CalibrationOptions& options) noexcept {
#if defined(__x86_64__)
  if (g_support == Support::kUnknown) {
    char source[64];
    const bool ok =
        ReadClocksource(source, sizeof source) && TscClockUsable(InvariantTsc(), source);
    g_support = ok ? Support::kYes : Support::kNo;
  }
  if (g_support != Support::kYes) return;
  if (trace::MonotonicNs() < g_calibrator.NextDueNs(options)) return;
  TscCurve curve{};
  switch (g_calibrator.OnSample(TakeTscSample(), options, &curve)) {
    case TscCalibrator::Action::kPublish:
      Publish(curve);
      break;
    case TscCalibrator::Action::kUnpublish:
      Publish(TscCurve{});  // slope 0: readers go back to clock_gettime
      break;
    case TscCalibrator::Action::kNone:
      break;
  }
#else
  (void)options;
#endif
}

bool ProbeClockUsesTsc() noexcept {
  const uint32_t seq = g_tsc_curve.seq.load(std::memory_order_acquire);
  return g_tsc_curve.words[seq & 1][5].load(std::memory_order_relaxed) != 0;
}

void ResetProbeClockAfterFork() noexcept {
  // The only thread left is the caller, so nothing reads while the curve is cleared.
  for (auto& copy : g_tsc_curve.words) {
    for (auto& word : copy) word.store(0, std::memory_order_relaxed);
  }
  g_tsc_curve.seq.store(0, std::memory_order_relaxed);
  g_calibrator = TscCalibrator();
  g_support = Support::kUnknown;
}

}  // namespace ncclscope::plugin
