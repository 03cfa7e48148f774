// Compute stragglers and slow links over synthetic training loops (step_model.h): world plus
// tensor-parallel pairs and two data-parallel groups, at 8 and 32 ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "hang_detector/verdicts/verdict_text.h"
#include "tests/hang_detector/straggler_job.h"

namespace ncclscope::testing {
namespace {

std::vector<int> AllBut(int n, std::vector<int> except) {
  std::vector<int> out;
  for (int r = 0; r < n; ++r) {
    if (std::find(except.begin(), except.end(), r) == except.end()) out.push_back(r);
  }
  return out;
}

// The evidence line that says when the lateness (or slowness) began, as "<word> since N s ago";
// its N must be the verdict's since_s, to the printed precision.
void ExpectSinceLine(const Verdict& v, const std::string& word) {
  char ago[64];
  std::snprintf(ago, sizeof ago, "%s since %.1f s ago, ", word.c_str(), v.since_s);
  const bool found = std::any_of(v.evidence.begin(), v.evidence.end(), [&](const auto& e) {
    return e.text.rfind(ago, 0) == 0 && e.text.find('#') != std::string::npos;
  });
  EXPECT_TRUE(found) << "no evidence line starting with '" << ago << "' naming the collective";
}

class Sizes : public ::testing::TestWithParam<int> {};

TEST_P(Sizes, HealthyJitterHasNoVerdict) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    StragglerJob j(GetParam(), seed);
    j.model.jitter_s = 0.005;  // a quarter of the compute time
    j.Run(40);
    const Analysis a = j.Analyze();
    EXPECT_EQ(First(a).cls, VerdictClass::kHealthy) << "seed " << seed << "\n"
                                                    << hang_detector::RenderText(a, true);
  }
}

TEST_P(Sizes, ComputeStragglerTwiceSlowerIsNamedWithItsVictims) {
  const int n = GetParam();
  StragglerJob j(n);
  j.model.jitter_s = 0.003;
  j.model.compute_slow = {{n - 1, 2.0, 10}};
  j.Run(10);
  const double onset = j.model.Now();
  j.Run(30);
  const Analysis a = j.Analyze();
  const Verdict& v = First(a);
  SCOPED_TRACE(hang_detector::RenderText(a, true));
  ASSERT_EQ(Stragglers(a).size(), 1u);
  EXPECT_EQ(v.cls, VerdictClass::kStraggler);
  EXPECT_EQ(v.culprits, std::vector<int>{n - 1});
  EXPECT_FALSE(v.tie);
  EXPECT_EQ(v.comm_name, "world");  // the group most ranks wait in leads
  EXPECT_EQ(v.victims, AllBut(n, {n - 1}));
  EXPECT_EQ(v.op, "allreduce");
  EXPECT_EQ(v.seq, 40u);
  EXPECT_NE(v.summary.find("compute straggler"), std::string::npos);
  // Since step 10: its compute ends 40 ms after that step began.
  EXPECT_NEAR(v.since_s, j.model.Now() + 0.01 - onset - 0.040, 0.005);
  EXPECT_TRUE(Mentions(v, n - 1));
  ExpectSinceLine(v, "late");
  EXPECT_EQ(hang_detector::ExitCode(a), 1);
  const std::string text = hang_detector::RenderText(a, false);
  EXPECT_NE(text.find("SLOW (straggler) comm world"), std::string::npos) << text;
}

// The straggler's communicators all find it late; the one with the most victims leads, however
// much earlier another one's late run began. Here the job issues its world allreduce only from
// step 24 on, so world's onset comes 24 steps after the groups'. Onsets are measured in each
// communicator's own window, and a node's digest keeps fewer collectives of a busy communicator
// than its ring files: when the onsets picked the headline, the digests of a job and its gathered
// ring files could name different communicators.
TEST_P(Sizes, StragglerHeadlineIsTheCommunicatorWithTheMostVictimsWhateverItsOnset) {
  const int n = GetParam();
  StragglerJob j(n);
  j.model.jitter_s = 0.003;
  j.model.compute_slow = {{n - 1, 2.0, 0}};
  std::vector<int> all;
  for (int r = 0; r < n; ++r) all.push_back(r);
  for (int step = 0; step < 36; ++step) {
    std::vector<ModelOp> ops;
    std::vector<std::vector<int>> members;
    for (size_t g = 0; g < j.groups.size(); ++g) {
      ops.push_back({j.ids[g], OpType::kAllReduce, 0.0005});
      members.push_back(j.groups[g]);
    }
    if (step >= 24) {
      ops.push_back({j.world, OpType::kAllReduce, 0.001});
      members.push_back(all);
    }
    j.model.Step(ops, members);
  }
  const Analysis a = j.Analyze();
  SCOPED_TRACE(hang_detector::RenderText(a, true));
  const std::vector<Verdict> s = Stragglers(a);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].culprits, std::vector<int>{n - 1});
  EXPECT_EQ(s[0].comm_name, "world");
  EXPECT_EQ(s[0].victims, AllBut(n, {n - 1}));
}

TEST_P(Sizes, ComputeStragglerTwentyPercentSlowerIsNamed) {
  const int n = GetParam();
  StragglerJob j(n);
  j.model.jitter_s = 0.002;
  j.model.compute_slow = {{3, 1.2, 5}};
  j.Run(40);
  const Analysis a = j.Analyze();
  SCOPED_TRACE(hang_detector::RenderText(a, true));
  ASSERT_EQ(Stragglers(a).size(), 1u);
  EXPECT_EQ(First(a).culprits, std::vector<int>{3});
}

TEST_P(Sizes, TwoComputeStragglersAreNamedApart) {
  const int n = GetParam();
  StragglerJob j(n);
  j.model.jitter_s = 0.002;
  j.model.compute_slow = {{1, 2.0, 5}, {4, 1.3, 5}};
  j.Run(40);
  const Analysis a = j.Analyze();
  SCOPED_TRACE(hang_detector::RenderText(a, true));
  const std::vector<Verdict> s = Stragglers(a);
  ASSERT_EQ(s.size(), 2u);
  std::vector<int> culprits = {s[0].culprits.at(0), s[1].culprits.at(0)};
  std::sort(culprits.begin(), culprits.end());
  EXPECT_EQ(culprits, (std::vector<int>{1, 4}));
}

TEST_P(Sizes, SlowLinkIsLocalizedByItsGroups) {
  const int n = GetParam();
  StragglerJob j(n);
  j.model.jitter_s = 0.003;
  j.model.link_slow = {{2, 3.0, 10}};
  j.Run(10, 0.006);
  const double onset = j.model.Now();
  j.Run(30, 0.006);
  const Analysis a = j.Analyze();
  const Verdict& v = First(a);
  SCOPED_TRACE(hang_detector::RenderText(a, true));
  ASSERT_EQ(Stragglers(a).size(), 1u);
  EXPECT_EQ(v.culprits, std::vector<int>{2});
  EXPECT_FALSE(v.tie);
  EXPECT_EQ(v.comm_name, "tp");  // the smallest slow group
  EXPECT_NE(v.summary.find("slow link"), std::string::npos);
  EXPECT_EQ(v.victims, AllBut(n, {2}));  // world is slow too: everyone waits
  EXPECT_NEAR(v.since_s, j.model.Now() + 0.01 - onset - 0.020, 0.005);  // after the compute
  ExpectSinceLine(v, "slow");
  EXPECT_EQ(hang_detector::ExitCode(a), 1);
}

TEST_P(Sizes, SlowLinkFromTheStartIsFoundAgainstSiblingGroups) {
  const int n = GetParam();
  StragglerJob j(n);
  j.model.jitter_s = 0.003;
  j.model.link_slow = {{5, 3.0, 0}};
  j.Run(30, 0.006);
  const Analysis a = j.Analyze();
  SCOPED_TRACE(hang_detector::RenderText(a, true));
  ASSERT_EQ(Stragglers(a).size(), 1u);
  EXPECT_EQ(First(a).culprits, std::vector<int>{5});
}

TEST_P(Sizes, SlowLargeOperationThatNeverChangedIsHealthy) {
  StragglerJob j(GetParam());
  j.model.jitter_s = 0.003;
  j.Run(30, 0.200, 1 << 28);  // the world allreduce takes ten compute times, every step
  EXPECT_EQ(First(j.Analyze()).cls, VerdictClass::kHealthy);
}

INSTANTIATE_TEST_SUITE_P(Ranks, Sizes, ::testing::Values(8, 32));

TEST(Straggler, SlowLinkWithoutGroupsToNarrowItIsATie) {
  JobBuilder job(4);
  StepModel model(&job, 4, 3);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  model.jitter_s = 0.003;
  model.link_slow = {{1, 3.0, 8}};
  for (int s = 0; s < 30; ++s) model.Step({{world, OpType::kAllReduce, 0.006}}, {{0, 1, 2, 3}});
  job.HeartbeatAll(model.Now());
  const Analysis a = AnalyzeAt(job, model.Now());
  SCOPED_TRACE(hang_detector::RenderText(a, true));
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kStraggler);
  EXPECT_TRUE(v.tie);
  EXPECT_EQ(v.culprits, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NE(v.summary.find("its earlier collectives"), std::string::npos);
}

TEST(Straggler, RecoveredStragglerIsHealthy) {
  StragglerJob j(8);
  j.model.jitter_s = 0.002;
  j.model.compute_slow = {{6, 2.0, 2}, {6, 0.5, 12}};  // 2x from step 2, back to 1x from 12
  j.Run(90);  // the window (64 collectives per group) holds only healthy steps
  EXPECT_EQ(First(j.Analyze()).cls, VerdictClass::kHealthy);
}

// A host that runs ahead of a stuck stream leaves more incomplete collectives than the span the
// detector keeps (128 per group): the straggler is still judged on the complete ones before them.
TEST(Straggler, StragglerIsNamedBehindAHundredsLongTailOfIncompleteCollectives) {
  StragglerJob j(8);
  j.model.jitter_s = 0.002;
  j.model.compute_slow = {{5, 2.0, 5}};
  j.Run(70);
  const double t = j.model.Now();
  for (int k = 0; k < 300; ++k) {
    for (int r = 0; r < 8; ++r)
      j.job.Coll(r, j.world, OpType::kAllReduce, t + 1e-4 * k, Done::kPending);
  }
  const Analysis a = j.Analyze();
  SCOPED_TRACE(hang_detector::RenderText(a, true));
  const std::vector<Verdict> s = Stragglers(a);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].culprits, std::vector<int>{5});
  EXPECT_EQ(s[0].comm_name, "world");
  EXPECT_EQ(s[0].seq, 70u);  // the newest complete world collective, not one of the tail
}

TEST(Straggler, TooFewCollectivesSayNothing) {
  StragglerJob j(8);
  j.model.compute_slow = {{6, 3.0, 0}};
  j.Run(5);
  EXPECT_EQ(First(j.Analyze()).cls, VerdictClass::kHealthy);
}

}  // namespace
}  // namespace ncclscope::testing
