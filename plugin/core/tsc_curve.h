// The arithmetic of the probe's fast clock: TSC ticks to CLOCK_MONOTONIC nanoseconds as a
// piecewise-linear curve, and its calibration from (tsc, monotonic ns) samples. Pure functions and
// one small state machine: samples are passed in, nothing here reads a clock (testable).
#pragma once

#include <cstdint>

namespace ncclscope::plugin {

// A pair read together: monotonic time ns was read no earlier than tick tsc (see TakeTscSample),
// so a curve anchored on it never runs behind CLOCK_MONOTONIC at its anchor.
struct TscSample {
  uint64_t tsc;
  int64_t ns;
};

// Fixed-point slope: ns per tick times 2^kTscShift. With 40 fractional bits the slope's rounding
// error is about 2e-12 at 2.5 GHz (8 ns per hour) and the slope still fits 64 bits for any TSC
// above 1 tick per 16 ms; the product with a tick delta is taken in 128 bits.
inline constexpr int kTscShift = 40;

// ns(tsc) = base_ns + (tsc - base_tsc) * mult >> kTscShift; ticks before base_tsc read as base_ns.
struct TscSegment {
  uint64_t base_tsc;
  int64_t base_ns;
  uint64_t mult;
};

inline int64_t SegmentNs(const TscSegment& s, uint64_t tsc) noexcept {
  const uint64_t d = tsc > s.base_tsc ? tsc - s.base_tsc : 0;
  return s.base_ns +
         static_cast<int64_t>((static_cast<unsigned __int128>(d) * s.mult) >> kTscShift);
}

// Two segments joined at after.base_tsc (the switch tick): `before` up to it, `after` from it on.
// A refresh publishes a curve whose `before` is bit for bit the previous curve's `after` and whose
// switch lies slightly in the future, so a reader still holding the previous curve and one holding
// the new curve compute the same value for every tick up to the switch; at the switch the two
// segments meet. Only the slope changes, time never jumps.
struct TscCurve {
  TscSegment before;
  TscSegment after;
};

inline int64_t CurveNs(const TscCurve& c, uint64_t tsc) noexcept {
  return SegmentNs(tsc >= c.after.base_tsc ? c.after : c.before, tsc);
}

// Slope between two samples; 0 when they do not go forward in both ticks and time.
uint64_t SlopeBetween(const TscSample& a, const TscSample& b) noexcept;

// The first curve: through b with slope (measured between an earlier sample and b), one segment.
TscCurve FirstCurve(const TscSample& b, uint64_t slope) noexcept;

// The curve after cur: equal to cur up to switch_tsc, then a slope that reaches the line through
// `now` with the measured `rate` horizon_tsc ticks after the switch, so an offset between the fast
// clock and CLOCK_MONOTONIC is worked off within one refresh period. The slope stays within
// about 1000 ppm of rate: always positive, and a bad sample cannot bend the clock far.
TscCurve ContinueCurve(const TscCurve& cur, const TscSample& now, uint64_t rate,
                       uint64_t switch_tsc, uint64_t horizon_tsc) noexcept;

struct CalibrationOptions {
  int64_t first_gap_ns = 100'000'000;   // between the two samples of the first calibration
  int64_t refresh_ns = 10'000'000'000;  // between refreshes
  int64_t lead_ns = 1'000'000;  // switch this long after the sample, after publication is done
  int64_t max_offset_ns = 1'000'000;  // beyond this (suspend, TSC trouble), start over
};

// Decides, from samples taken by the caller, when to publish which curve. One caller at a time.
class TscCalibrator {
 public:
  enum class Action { kNone, kPublish, kUnpublish };

  // Feeds a sample. kPublish: publish *out. kUnpublish: the TSC went backwards or drifted too far
  // from CLOCK_MONOTONIC; readers must fall back to clock_gettime (calibration starts over).
  Action OnSample(const TscSample& s, const CalibrationOptions& o, TscCurve* out) noexcept;

  // Earliest monotonic time at which OnSample may do something.
  int64_t NextDueNs(const CalibrationOptions& o) const noexcept;

 private:
  bool have_anchor_ = false;
  bool calibrated_ = false;
  TscSample last_{};  // first sample before calibration, then the one of the last refresh
  TscCurve curve_{};
};

}  // namespace ncclscope::plugin
