// The fast clock's arithmetic and calibration with injected samples: no clock is read here.
#include "plugin/core/tsc_curve.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "plugin/core/probe_clock.h"

namespace ncclscope::plugin {
namespace {

constexpr int64_t kNsPerMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

// A 2.5 GHz TSC: 0.4 ns per tick. ns_per_tick_ppm skews the monotonic clock against it.
TscSample At(int64_t ns, double ppm = 0, int64_t offset_ns = 0) {
  const double ticks = static_cast<double>(ns) * 2.5 / (1.0 + ppm * 1e-6);
  return TscSample{1'000'000 + static_cast<uint64_t>(ticks), ns + offset_ns};
}

TEST(TscCurve, SlopeAndEvaluation) {
  const uint64_t slope = SlopeBetween(At(0), At(100 * kNsPerMs));
  EXPECT_NEAR(static_cast<double>(slope) / (1ull << kTscShift), 0.4, 1e-9);
  const TscCurve c = FirstCurve(At(100 * kNsPerMs), slope);
  EXPECT_EQ(CurveNs(c, At(100 * kNsPerMs).tsc), 100 * kNsPerMs);
  // The fixed point itself loses nothing that matters over an hour (slope rounding: < 10 ns).
  const uint64_t hour_slope = SlopeBetween(At(0), At(3600 * kS));
  EXPECT_NEAR(CurveNs(FirstCurve(At(0), hour_slope), At(3600 * kS).tsc), 3600 * kS, 10);
  // Ticks before the anchor never read earlier than the anchor.
  EXPECT_EQ(CurveNs(c, 5), 100 * kNsPerMs);
}

TEST(TscCurve, SamplesThatDoNotAdvanceGiveNoSlope) {
  EXPECT_EQ(SlopeBetween(At(10), At(10)), 0u);
  EXPECT_EQ(SlopeBetween(At(20), At(10)), 0u);
  EXPECT_EQ(SlopeBetween(TscSample{100, 5}, TscSample{200, 5}), 0u);
}

TEST(TscCurve, RefreshIsContinuousAndMonotonic) {
  const uint64_t slope = SlopeBetween(At(0), At(100 * kNsPerMs));
  const TscCurve old_curve = FirstCurve(At(100 * kNsPerMs), slope);
  // Monotonic time ran 50 ppm faster than the first slope said: the refresh must steer up.
  const TscSample now = At(10 * kS, 50);
  const uint64_t rate = SlopeBetween(At(100 * kNsPerMs, 50), now);
  const uint64_t sw = now.tsc + 2'500'000;  // 1 ms later
  const TscCurve next = ContinueCurve(old_curve, now, rate, sw, 25'000'000'000);
  // Up to the switch the new curve is the old one, tick for tick; at the switch they meet.
  for (uint64_t t = now.tsc - 1000; t <= sw; t += 997) {
    ASSERT_EQ(CurveNs(next, t), CurveNs(old_curve, t)) << t;
  }
  EXPECT_EQ(CurveNs(next, sw), CurveNs(old_curve, sw));
  // Never back, across the switch and beyond.
  int64_t last = CurveNs(next, sw - 10'000);
  for (uint64_t t = sw - 10'000; t < sw + 10'000'000; t += 7) {
    const int64_t v = CurveNs(next, t);
    ASSERT_GE(v, last) << t;
    last = v;
  }
  EXPECT_GT(next.after.mult, old_curve.after.mult);
}

TEST(TscCurve, RefreshWorksOffAnOffsetWithinOnePeriod) {
  // The old curve runs 200 us ahead of CLOCK_MONOTONIC at the refresh.
  const uint64_t rate = SlopeBetween(At(0), At(10 * kS));
  const TscCurve ahead = FirstCurve(At(0, 0, 200'000), rate);
  const TscSample now = At(10 * kS);
  const uint64_t horizon = 25'000'000'000;  // 10 s of ticks
  const TscCurve next = ContinueCurve(ahead, now, rate, now.tsc, horizon);
  EXPECT_NEAR(CurveNs(next, now.tsc + horizon), At(20 * kS).ns, 1000);
  EXPECT_LT(next.after.mult, rate);
}

TEST(TscCurve, SlopeCorrectionIsBounded) {
  // A wild sample (1 s off) may bend the slope by about 1000 ppm, no more, and never below zero.
  const uint64_t rate = SlopeBetween(At(0), At(10 * kS));
  const TscCurve cur = FirstCurve(At(10 * kS), rate);
  const TscSample behind = At(10 * kS, 0, -kS);
  const TscCurve next = ContinueCurve(cur, behind, rate, behind.tsc, 25'000'000);
  EXPECT_GE(next.after.mult, rate - (rate >> 10));
  EXPECT_GT(next.after.mult, 0u);
  const TscSample ahead = At(10 * kS, 0, kS);
  EXPECT_LE(ContinueCurve(cur, ahead, rate, ahead.tsc, 25'000'000).after.mult, rate + (rate >> 10));
}

TEST(TscCalibrator, FirstCurveAfterTheGapThenRefreshes) {
  TscCalibrator cal;
  const CalibrationOptions o;  // 100 ms, then every 10 s
  TscCurve c{};
  EXPECT_EQ(cal.NextDueNs(o), 0);
  EXPECT_EQ(cal.OnSample(At(1 * kS), o, &c), TscCalibrator::Action::kNone);
  EXPECT_EQ(cal.NextDueNs(o), 1 * kS + 100 * kNsPerMs);
  EXPECT_EQ(cal.OnSample(At(1 * kS + 50 * kNsPerMs), o, &c), TscCalibrator::Action::kNone);
  ASSERT_EQ(cal.OnSample(At(1 * kS + 100 * kNsPerMs), o, &c), TscCalibrator::Action::kPublish);
  EXPECT_EQ(CurveNs(c, At(1 * kS + 100 * kNsPerMs).tsc), 1 * kS + 100 * kNsPerMs);
  EXPECT_EQ(cal.OnSample(At(5 * kS), o, &c), TscCalibrator::Action::kNone);
  const TscCurve first = c;
  const TscSample refresh = At(11 * kS + 100 * kNsPerMs, 30);
  ASSERT_EQ(cal.OnSample(refresh, o, &c), TscCalibrator::Action::kPublish);
  EXPECT_EQ(c.before.base_tsc, first.after.base_tsc);
  EXPECT_EQ(c.before.mult, first.after.mult);
  EXPECT_GT(c.after.base_tsc, refresh.tsc);  // the switch lies after publication
  EXPECT_EQ(CurveNs(c, c.after.base_tsc), CurveNs(first, c.after.base_tsc));
}

TEST(TscCalibrator, StartsOverWhenTheTscGoesBackOrDriftsFar) {
  TscCalibrator cal;
  const CalibrationOptions o;
  TscCurve c{};
  cal.OnSample(At(0), o, &c);
  ASSERT_EQ(cal.OnSample(At(100 * kNsPerMs), o, &c), TscCalibrator::Action::kPublish);
  // 5 ms away from CLOCK_MONOTONIC after 10 s: beyond max_offset_ns, back to clock_gettime.
  EXPECT_EQ(cal.OnSample(At(10100 * kNsPerMs, 0, 5 * kNsPerMs), o, &c),
            TscCalibrator::Action::kUnpublish);
  EXPECT_EQ(cal.OnSample(At(10200 * kNsPerMs, 0, 5 * kNsPerMs), o, &c),
            TscCalibrator::Action::kPublish);
  // The TSC went backwards (a reset): start over without a curve.
  EXPECT_EQ(cal.OnSample(TscSample{5, 30 * kS}, o, &c), TscCalibrator::Action::kUnpublish);
}

TEST(TscCalibrator, FallsBackWithoutInvariantTscOrTscClocksource) {
  EXPECT_TRUE(TscClockUsable(true, "tsc\n"));
  EXPECT_TRUE(TscClockUsable(true, "tsc"));
  EXPECT_FALSE(TscClockUsable(false, "tsc\n"));
  EXPECT_FALSE(TscClockUsable(true, "kvm-clock\n"));
  EXPECT_FALSE(TscClockUsable(true, "tsc-early\n"));
  EXPECT_FALSE(TscClockUsable(true, nullptr));
}

}  // namespace
}  // namespace ncclscope::plugin
