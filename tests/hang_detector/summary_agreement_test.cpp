// A verdict's summary agrees with its fields: it names as culprits exactly the ranks the culprit
// list holds, after the correlator moved ranks out of it (a culprit that only waits elsewhere, a
// dead or frozen rank taking over a wait). The reader of summary_ranks.h is tested first, so a
// passing agreement check means something.
#include <gtest/gtest.h>

#include "hang_detector/verdicts/verdict_text.h"
#include "tests/hang_detector/analyze_helpers.h"
#include "tests/hang_detector/summary_ranks.h"

namespace ncclscope::testing {
namespace {

using hang_detector::ProcessState;

TEST(SummaryRanks, ReadsEveryFormOfRankList) {
  EXPECT_EQ(RanksNamed("rank 5 never issued it; ranks 0,2-4 wait"),
            (std::vector<int>{0, 2, 3, 4, 5}));
  EXPECT_EQ(RanksNamed("ranks 3-19:8 (3 ranks) wait; rank file1 too"),
            (std::vector<int>{-2, 3, 11, 19}));
  EXPECT_EQ(RanksNamed("every rank issued it"), std::vector<int>{});
}

TEST(SummaryRanks, TellsCulpritsFromVictims) {
  EXPECT_EQ(RanksNamedAsCulprits("ranks 2,3 never issued it; ranks 0,1 wait"),
            (std::vector<int>{2, 3}));
  EXPECT_EQ(RanksNamedAsCulprits("rank 0 issued allreduce #2 count=512 float32 sum where ranks "
                                 "4-30:2 (14 ranks) issued allreduce (count 256 vs 512)"),
            std::vector<int>{0});
  EXPECT_EQ(RanksNamedAsCulprits("every rank issued it; device work never completed on ranks 0,1"),
            (std::vector<int>{0, 1}));
  EXPECT_EQ(RanksNamedAsCulprits("comm ranks 0,3 never joined the creation of world"),
            std::vector<int>{});
}

TEST(SummaryRanks, ADisagreementIsReported) {
  EXPECT_EQ(SummaryDisagreement("ranks 2,3 never issued it; ranks 0,1 wait", {2, 3}, false), "");
  EXPECT_NE(SummaryDisagreement("ranks 2,3 never issued it; ranks 0,1 wait", {2}, false), "");
  EXPECT_NE(SummaryDisagreement("rank 2 never issued it; ranks 0,1 wait", {2, 3}, false), "");
  EXPECT_EQ(SummaryDisagreement("ranks disagree at #3; no majority", {0, 1}, true), "");
}

TEST(SummaryAgreement, ACulpritThatWaitsElsewhereLeavesTheSummaryToo) {
  // World #3: ranks 0,1 wait; ranks 2 and 3 never issued it. Rank 3 cannot: it waits in tp #2
  // (since 0.5 s), for rank 1, which waits in world #3. Rank 2 is the cause of it all.
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t tp = job.Comm("tp", {1, 3}, world, 1);
  for (int r = 0; r < 4; ++r) {
    job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.Coll(r, world, OpType::kAllReduce, 0.2, Done::kCompleted);
  }
  for (int r : {1, 3}) job.Coll(r, tp, OpType::kAllReduce, 0.3, Done::kCompleted);
  job.Coll(3, tp, OpType::kAllReduce, 0.5, Done::kPending);
  for (int r : {0, 1}) job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending);
  job.HeartbeatAll(8);
  const Analysis a = AnalyzeWith(job, 8, ConfirmAtOnce());
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_EQ(v.comm_id, world);
  EXPECT_EQ(v.culprits, std::vector<int>{2});
  EXPECT_EQ(SummaryDisagreement(v.summary, v.culprits, v.tie), "") << v.summary;
  // Rank 3's absence is still explained, as a symptom.
  EXPECT_NE(v.summary.find("rank 3"), std::string::npos) << v.summary;
}

// Ranks 0-3 of world all issued #3 and wait in it; ranks 0, 2, 3 beat until t = 6.
JobBuilder AllIssued(uint64_t* world) {
  JobBuilder job(4);
  *world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    job.Coll(r, *world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.Coll(r, *world, OpType::kAllReduce, 1.0, Done::kPending);
  }
  for (int r : {0, 2, 3}) job.Heartbeat(r, 6);
  return job;
}

TEST(SummaryAgreement, ADeadRankIsNotListedAmongStuckDevices) {
  uint64_t world;
  JobBuilder job = AllIssued(&world);
  job.Heartbeat(1, 1.1);
  FakeProbe probe;
  probe.states[JobBuilder::Pid(1)] = ProcessState::kGone;
  const Analysis a = AnalyzeAt(job, 6, &probe);
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  ASSERT_EQ(a.verdicts.size(), 1u);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDead);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
  EXPECT_EQ(v.victims, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(v.summary.find("device work never completed"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("rank 1 died or exited"), std::string::npos) << v.summary;
  EXPECT_EQ(SummaryDisagreement(v.summary, v.culprits, v.tie), "") << v.summary;
}

TEST(SummaryAgreement, ADeadAndAFrozenRankOfOneWaitAreBothNamed) {
  // World #3: ranks 0,1 wait; rank 2 is gone and rank 3 stopped, neither issued it.
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
  for (int r : {0, 1}) job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending);
  for (int r : {0, 1}) job.Heartbeat(r, 6);
  for (int r : {2, 3}) job.Heartbeat(r, 0.5);
  FakeProbe probe;
  probe.states[JobBuilder::Pid(2)] = ProcessState::kGone;
  probe.states[JobBuilder::Pid(3)] = ProcessState::kStopped;
  const Analysis a = AnalyzeAt(job, 6, &probe);
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  ASSERT_EQ(a.verdicts.size(), 1u);  // no second "nobody waits on it" verdict for rank 3
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDead);
  EXPECT_EQ(v.culprits, (std::vector<int>{2, 3}));
  EXPECT_EQ(v.victims, (std::vector<int>{0, 1}));
  EXPECT_NE(v.summary.find("rank 3 froze"), std::string::npos) << v.summary;
  EXPECT_EQ(SummaryDisagreement(v.summary, v.culprits, v.tie), "") << v.summary;
}

TEST(SummaryAgreement, AFrozenRankInsideADeviceStallNamesOnlyIt) {
  uint64_t world;
  JobBuilder job = AllIssued(&world);
  job.Heartbeat(1, 1.1);
  FakeProbe probe;
  probe.states[JobBuilder::Pid(1)] = ProcessState::kStopped;
  const Analysis a = AnalyzeAt(job, 6, &probe);
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kFrozen);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
  EXPECT_EQ(SummaryDisagreement(v.summary, v.culprits, v.tie), "") << v.summary;
}

}  // namespace
}  // namespace ncclscope::testing
