#include "plugin/core/tsc_curve.h"

namespace ncclscope::plugin {
namespace {

using u128 = unsigned __int128;

// Ticks spanned by ns nanoseconds at slope (ns per tick << kTscShift).
uint64_t TicksFor(int64_t ns, uint64_t slope) noexcept {
  if (ns <= 0 || slope == 0) return 0;
  return static_cast<uint64_t>((static_cast<u128>(ns) << kTscShift) / slope);
}

int64_t Abs(int64_t v) noexcept {
  return v < 0 ? -v : v;
}

}  // namespace

uint64_t SlopeBetween(const TscSample& a, const TscSample& b) noexcept {
  if (b.tsc <= a.tsc || b.ns <= a.ns) return 0;
  const u128 ns = static_cast<u128>(b.ns - a.ns);
  return static_cast<uint64_t>((ns << kTscShift) / (b.tsc - a.tsc));
}

TscCurve FirstCurve(const TscSample& b, uint64_t slope) noexcept {
  const TscSegment s{b.tsc, b.ns, slope};
  return TscCurve{s, s};
}

TscCurve ContinueCurve(const TscCurve& cur, const TscSample& now, uint64_t rate,
                       uint64_t switch_tsc, uint64_t horizon_tsc) noexcept {
  const int64_t switch_ns = CurveNs(cur, switch_tsc);
  const int64_t target_ns = SegmentNs(TscSegment{now.tsc, now.ns, rate}, switch_tsc + horizon_tsc);
  const int64_t rise = target_ns - switch_ns;
  uint64_t slope =
      rise > 0 ? static_cast<uint64_t>((static_cast<u128>(rise) << kTscShift) / horizon_tsc) : 0;
  const uint64_t max_slew = rate >> 10;  // about 1000 ppm
  if (slope < rate - max_slew) slope = rate - max_slew;
  if (slope > rate + max_slew) slope = rate + max_slew;
  return TscCurve{cur.after, TscSegment{switch_tsc, switch_ns, slope}};
}

TscCalibrator::Action TscCalibrator::OnSample(const TscSample& s, const CalibrationOptions& o,
                                              TscCurve* out) noexcept {
  if (!have_anchor_) {
    have_anchor_ = true;
    last_ = s;
    return Action::kNone;
  }
  if (s.ns - last_.ns < (calibrated_ ? o.refresh_ns : o.first_gap_ns)) return Action::kNone;
  const uint64_t rate = SlopeBetween(last_, s);
  const bool was_calibrated = calibrated_;
  if (rate == 0 || (calibrated_ && Abs(CurveNs(curve_, s.tsc) - s.ns) > o.max_offset_ns)) {
    // Starting over from this sample keeps clock_gettime in charge until a new first calibration.
    calibrated_ = false;
    last_ = s;
    return was_calibrated ? Action::kUnpublish : Action::kNone;
  }
  if (!calibrated_) {
    curve_ = FirstCurve(s, rate);
  } else {
    curve_ = ContinueCurve(curve_, s, rate, s.tsc + TicksFor(o.lead_ns, rate),
                           TicksFor(o.refresh_ns, rate));
  }
  calibrated_ = true;
  last_ = s;
  *out = curve_;
  return Action::kPublish;
}

int64_t TscCalibrator::NextDueNs(const CalibrationOptions& o) const noexcept {
  if (!have_anchor_) return 0;
  return last_.ns + (calibrated_ ? o.refresh_ns : o.first_gap_ns);
}

}  // namespace ncclscope::plugin
