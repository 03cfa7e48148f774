// The stall rule with injected time and completions: progress, not a fixed timeout.
#include <gtest/gtest.h>

#include "plugin/watchdog/stall_rule.h"

namespace ncclscope::plugin {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;
const int kAllReduce = static_cast<int>(OpClass::kAllReduce);
const int kSend = static_cast<int>(OpClass::kSend);

StallRule Rule() {
  return StallRule(StallParams{5 * kS, 10});
}

TEST(StallRule, SlowOperationsThatKeepCompletingNeverStall) {
  StallRule rule = Rule();
  // Each allreduce takes 3 s (below the floor) and one is always in flight, for a minute.
  int64_t t = 0;
  rule.OnIssue(kAllReduce, t);
  for (int i = 0; i < 20; ++i) {
    rule.OnIssue(kAllReduce, t + 1 * kMs);
    t += 3 * kS;
    EXPECT_FALSE(rule.Check(t).stalled) << "at " << t / kS << " s";
    rule.OnComplete(kAllReduce, 3 * kS, t);
  }
  EXPECT_FALSE(rule.Check(t + 4 * kS).stalled);
}

TEST(StallRule, NoCompletionForTheThresholdIsAStall) {
  StallRule rule = Rule();
  for (int i = 0; i < 100; ++i) {
    rule.OnIssue(kAllReduce, i * kMs);
    rule.OnComplete(kAllReduce, 1 * kMs, i * kMs + kMs);
  }
  rule.OnIssue(kAllReduce, 200 * kMs);
  EXPECT_FALSE(rule.Check(200 * kMs + 5 * kS).stalled);  // exactly T: not yet
  const StallState s = rule.Check(200 * kMs + 5 * kS + 1);
  EXPECT_TRUE(s.stalled);
  EXPECT_EQ(s.cls, kAllReduce);
  EXPECT_EQ(s.threshold_ns, 5 * kS);  // 10 x ~1 ms is below the floor
  EXPECT_EQ(s.since_ns, 200 * kMs);
  EXPECT_EQ(s.in_flight, 1u);
  // One completion is progress: the stall is over.
  rule.OnComplete(kAllReduce, 6 * kS, 200 * kMs + 6 * kS);
  EXPECT_FALSE(rule.Check(200 * kMs + 6 * kS + 1).stalled);
}

TEST(StallRule, NothingInFlightIsNeverAStall) {
  StallRule rule = Rule();
  rule.OnIssue(kSend, 0);
  rule.OnComplete(kSend, kMs, kMs);
  EXPECT_FALSE(rule.Check(3600 * kS).stalled);
  rule.OnIssue(kSend, 0);
  rule.OnForget(kSend);  // untracked or overwritten: gone without counting as progress
  EXPECT_FALSE(rule.Check(3600 * kS).stalled);
}

TEST(StallRule, ThresholdAdaptsToTheClassP99) {
  StallRule rule = Rule();
  EXPECT_EQ(rule.ThresholdNs(kAllReduce), 5 * kS);  // no samples: the floor
  // Allreduces that take about 2 s: T = 10 x p99, about 20 s (bucket edges are within 19%).
  for (int i = 0; i < 200; ++i) rule.OnComplete(kAllReduce, 2 * kS, 0);
  const int64_t t = rule.ThresholdNs(kAllReduce);
  EXPECT_GE(t, 20 * kS);
  EXPECT_LE(t, 24 * kS);
  rule.OnIssue(kAllReduce, 0);
  EXPECT_FALSE(rule.Check(15 * kS).stalled);  // a fixed 5 s timeout would have fired
  EXPECT_TRUE(rule.Check(t + 1).stalled);
  // Other classes keep their own threshold.
  EXPECT_EQ(rule.ThresholdNs(kSend), 5 * kS);
}

TEST(StallRule, P99FollowsRecentLatenciesAfterDecay) {
  StallRule rule = Rule();
  for (uint64_t i = 0; i < LatencyHistogram::kDecayAt; ++i) rule.OnComplete(kSend, 4 * kS, 0);
  EXPECT_GE(rule.ThresholdNs(kSend), 40 * kS);
  // The job got faster: after enough fast samples the old slow ones drop below the 1% tail.
  for (uint64_t i = 0; i < 8 * LatencyHistogram::kDecayAt; ++i) rule.OnComplete(kSend, kMs, 0);
  EXPECT_EQ(rule.ThresholdNs(kSend), 5 * kS);
}

TEST(StallRule, ClassesStallIndependently) {
  StallRule rule = Rule();
  rule.OnIssue(kSend, 0);
  // Allreduces keep completing; the send does not: the send class stalls.
  for (int i = 1; i <= 10; ++i) {
    rule.OnIssue(kAllReduce, i * kS);
    rule.OnComplete(kAllReduce, kMs, i * kS + kMs);
  }
  const StallState s = rule.Check(10 * kS);
  EXPECT_TRUE(s.stalled);
  EXPECT_EQ(s.cls, kSend);
}

TEST(LatencyHistogram, BucketsAreOrderedAndTight) {
  for (int64_t ns : {1LL, 5LL, 1000LL, 123456789LL, 3'000'000'000LL}) {
    const int b = LatencyHistogram::BucketOf(ns);
    EXPECT_GE(LatencyHistogram::UpperEdge(b), ns);
    EXPECT_LE(static_cast<double>(LatencyHistogram::UpperEdge(b)),
              1.26 * static_cast<double>(ns) + 1);
    EXPECT_LE(LatencyHistogram::BucketOf(ns), LatencyHistogram::BucketOf(ns + 1));
  }
  LatencyHistogram h;
  EXPECT_EQ(h.Quantile(0.99), 0);
  for (int i = 0; i < 99; ++i) h.Add(1000);
  h.Add(1'000'000'000);
  EXPECT_LT(h.Quantile(0.99), 2000);  // the one outlier is the top 1%
  h.Add(1'000'000'000);
  EXPECT_GE(h.Quantile(0.99), 1'000'000'000);
}

TEST(OpClass, WatchesDeviceOpsAndBlockingCalls) {
  EXPECT_EQ(OpClassOf(trace::OpType::kAllReduce), kAllReduce);
  EXPECT_EQ(OpClassOf(trace::OpType::kCommSplit), static_cast<int>(OpClass::kCommCreate));
  EXPECT_EQ(OpClassOf(trace::OpType::kGroupEnd), static_cast<int>(OpClass::kGroupEnd));
  EXPECT_EQ(OpClassOf(trace::OpType::kGroupStart), -1);
  EXPECT_EQ(OpClassOf(trace::OpType::kCommAbort), -1);
  EXPECT_STREQ(OpClassName(kSend), "send");
}

}  // namespace
}  // namespace ncclscope::plugin
