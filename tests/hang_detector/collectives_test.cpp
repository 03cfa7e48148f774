// Missing, desync and device-stall on collectives, and the waiting-on view, over synthetic jobs.
#include <gtest/gtest.h>

#include "hang_detector/verdicts/verdict_text.h"
#include "tests/hang_detector/analyze_helpers.h"

namespace ncclscope::testing {
namespace {

// Four ranks, two completed allreduces on world.
JobBuilder Warmed(uint64_t* world) {
  JobBuilder job(4);
  *world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    job.Coll(r, *world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.Coll(r, *world, OpType::kAllReduce, 0.2, Done::kCompleted);
  }
  return job;
}

TEST(Collectives, CompletedJobIsHealthy) {
  uint64_t world;
  JobBuilder job = Warmed(&world);
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  EXPECT_EQ(First(a).cls, VerdictClass::kHealthy);
  EXPECT_EQ(a.verdicts.size(), 1u);
  EXPECT_EQ(hang_detector::ExitCode(a), 0);
}

TEST(Collectives, ShortWaitIsProgressNotHang) {
  uint64_t world;
  JobBuilder job = Warmed(&world);
  for (int r = 0; r < 3; ++r) job.Coll(r, world, OpType::kAllReduce, 4.5, Done::kPending);
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  EXPECT_EQ(First(a).cls, VerdictClass::kHealthy);
  ASSERT_EQ(a.waiting.size(), 1u);
  EXPECT_EQ(a.waiting[0].seq, 3u);
  EXPECT_EQ(a.waiting[0].not_issued, std::vector<int>{3});
}

TEST(Collectives, RankThatNeverIssuedIsTheCulprit) {
  uint64_t world;
  JobBuilder job = Warmed(&world);
  for (int r = 0; r < 3; ++r) job.Coll(r, world, OpType::kAllReduce, 1.0 + r * 0.1, Done::kPending);
  job.HeartbeatAll(13.3);
  const Analysis a = AnalyzeWith(job, 13.3, ConfirmAtOnce());
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_EQ(v.comm_name, "world");
  EXPECT_EQ(v.op, "allreduce");
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_EQ(v.victims, (std::vector<int>{0, 1, 2}));
  EXPECT_NEAR(v.since_s, 12.3, 0.01);
  EXPECT_TRUE(Mentions(v, 3));
  EXPECT_EQ(hang_detector::ExitCode(a), 2);
  const std::string text = hang_detector::RenderText(a, false);
  EXPECT_NE(text.find("HANG (missing) comm world"), std::string::npos) << text;
  EXPECT_NE(text.find("allreduce #3: rank 3 never issued it"), std::string::npos) << text;
}

TEST(Collectives, OddOneOutIsBlamedNotTheFirstRank) {
  uint64_t world;
  JobBuilder job = Warmed(&world);
  job.Coll(0, world, OpType::kAllGather, 1.0, Done::kPending);  // rank 0 is the odd one
  for (int r = 1; r < 4; ++r) job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending);
  job.HeartbeatAll(2);
  const Analysis a = AnalyzeAt(job, 2);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDesync);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.op, "allreduce");
  EXPECT_EQ(v.culprits, std::vector<int>{0});
  EXPECT_FALSE(v.tie);
  EXPECT_NE(v.summary.find("type allreduce vs allgather"), std::string::npos) << v.summary;
}

TEST(Collectives, DesyncNamesEveryDifferingField) {
  uint64_t world;
  JobBuilder job = Warmed(&world);
  for (int r = 0; r < 4; ++r) {
    auto& rec =
        job.Coll(r, world, OpType::kBroadcast, 1.0, Done::kCompleted, 64, kFloat32, r == 2 ? 1 : 0);
    if (r == 2) rec.dtype = kFloat16;
  }
  job.HeartbeatAll(2);
  const Analysis a = AnalyzeAt(job, 2);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDesync);
  EXPECT_EQ(v.culprits, std::vector<int>{2});
  EXPECT_NE(v.summary.find("dtype float32 vs float16"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("root 0 vs 1"), std::string::npos) << v.summary;
}

// A rank recorded by the profiler alone knows the reduction op only from NCCL's NVTX range; where
// that is off (NCCL_NVTX_DISABLE=1 on one node) its record says -1, which is no disagreement.
TEST(Collectives, AnUnknownReductionOpAgreesWithAnyButTwoKnownOnesMustMatch) {
  uint64_t world;
  JobBuilder job = Warmed(&world);
  for (int r = 0; r < 4; ++r) {
    auto& rec = job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kCompleted);
    if (r == 1) rec.redop = -1;
  }
  job.HeartbeatAll(2);
  EXPECT_EQ(First(AnalyzeAt(job, 2)).cls, VerdictClass::kHealthy);

  for (int r = 0; r < 4; ++r) {
    auto& rec = job.Coll(r, world, OpType::kAllReduce, 2.5, Done::kPending);
    if (r == 1) rec.redop = -1;
    if (r == 3) rec.redop = 2;  // max, where the others sum
  }
  job.HeartbeatAll(4.5);
  const Analysis a = AnalyzeAt(job, 4.5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDesync);
  EXPECT_EQ(v.seq, 4u);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_NE(v.summary.find("redop sum vs max"), std::string::npos) << v.summary;
  EXPECT_EQ(v.summary.find("unknown"), std::string::npos) << v.summary;
}

TEST(Collectives, TwoRankDisagreementIsATie) {
  JobBuilder job(2);
  const uint64_t pair = job.Comm("pair", {0, 1});
  job.Coll(0, pair, OpType::kAllReduce, 1.0, Done::kPending, 256);
  job.Coll(1, pair, OpType::kAllReduce, 1.0, Done::kPending, 512);
  job.HeartbeatAll(2);
  const Analysis a = AnalyzeAt(job, 2);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDesync);
  EXPECT_TRUE(v.tie);
  EXPECT_EQ(v.culprits, (std::vector<int>{0, 1}));
  EXPECT_NE(v.summary.find("count 256 vs 512"), std::string::npos) << v.summary;
}

TEST(Collectives, SiblingGroupsBreakATwoRankTie) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t tp0 = job.Comm("tp", {0, 1}, world, 1);
  const uint64_t tp1 = job.Comm("tp", {2, 3}, world, 1);
  for (int r : {0, 1}) job.Coll(r, tp0, OpType::kAllReduce, 1.0, Done::kCompleted);
  for (int r : {2, 3}) job.Coll(r, tp1, OpType::kAllReduce, 1.0, Done::kCompleted);
  job.Coll(0, tp0, OpType::kAllReduce, 2.0, Done::kPending, 256);
  job.Coll(1, tp0, OpType::kAllReduce, 2.0, Done::kPending, 512);  // rank 1 passes twice the count
  for (int r : {2, 3}) job.Coll(r, tp1, OpType::kAllReduce, 2.0, Done::kCompleted, 256);
  job.HeartbeatAll(3);
  const Analysis a = AnalyzeAt(job, 3);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDesync);
  EXPECT_EQ(v.comm_name, "tp");
  EXPECT_EQ(v.seq, 2u);
  EXPECT_FALSE(v.tie);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
  EXPECT_EQ(v.victims, std::vector<int>{0});
}

// Recorded by the profiler plugin alone, a split's parent is unknown (its table entry has none):
// the groups of the same name are its siblings then, and only those.
TEST(Collectives, ParentlessGroupsOfTheSameNameBreakATwoRankTie) {
  for (const char* other : {"tp", "dp"}) {
    JobBuilder job(4);
    const uint64_t tp0 = job.Comm("tp", {0, 1});
    const uint64_t g1 = job.Comm(other, {2, 3});
    job.Coll(0, tp0, OpType::kAllReduce, 1.0, Done::kPending, 256);
    job.Coll(1, tp0, OpType::kAllReduce, 1.0, Done::kPending, 512);
    for (int r : {2, 3}) job.Coll(r, g1, OpType::kAllReduce, 1.0, Done::kCompleted, 256);
    job.HeartbeatAll(3);
    const Analysis a = AnalyzeAt(job, 3);
    const Verdict& v = First(a);
    SCOPED_TRACE(other);
    EXPECT_EQ(v.cls, VerdictClass::kDesync);
    const bool siblings = std::string(other) == "tp";
    EXPECT_EQ(v.tie, !siblings);
    const std::vector<int> expected = siblings ? std::vector<int>{1} : std::vector<int>{0, 1};
    EXPECT_EQ(v.culprits, expected);
  }
}

TEST(Collectives, HealthyWorldAndHungSplitReportOnlyTheSplit) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t tp0 = job.Comm("tp", {0, 1}, world, 1);
  const uint64_t tp1 = job.Comm("tp", {2, 3}, world, 1);
  for (int r = 0; r < 4; ++r) job.Coll(r, world, OpType::kAllReduce, 0.5, Done::kCompleted);
  for (int r : {0, 1}) job.Coll(r, tp0, OpType::kAllGather, 1.0, Done::kCompleted, 32);
  job.Coll(2, tp1, OpType::kAllGather, 1.0, Done::kCompleted, 32);
  job.Coll(3, tp1, OpType::kAllGather, 1.0, Done::kCompleted, 32);
  job.Coll(2, tp1, OpType::kAllGather, 1.5, Done::kPending, 32);  // rank 3 never issues tp #2
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeAt(job, 6);
  ASSERT_EQ(a.verdicts.size(), 1u);
  const Verdict& v = a.verdicts[0];
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_EQ(v.comm_id, tp1);
  EXPECT_EQ(v.seq, 2u);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_EQ(v.victims, std::vector<int>{2});
}

TEST(Collectives, RankWaitingElsewhereIsNotBlamedForWhatItCannotIssue) {
  // Rank 1 never issues tp #2; rank 0 waits there, so it never reaches world #2 either.
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t tp = job.Comm("tp", {0, 1}, world, 1);
  for (int r = 0; r < 4; ++r) job.Coll(r, world, OpType::kAllReduce, 0.5, Done::kCompleted);
  for (int r : {0, 1}) job.Coll(r, tp, OpType::kAllReduce, 0.6, Done::kCompleted);
  job.Coll(0, tp, OpType::kAllReduce, 1.0, Done::kPending);
  for (int r : {2, 3}) job.Coll(r, world, OpType::kAllReduce, 2.0, Done::kPending);
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeAt(job, 6);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_EQ(v.comm_id, tp);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
  for (const Verdict& other : a.verdicts) {
    EXPECT_NE(other.culprits, std::vector<int>{0}) << other.summary;
  }
}

TEST(Collectives, EveryRankIssuedButNoneCompletedIsADeviceStallTie) {
  uint64_t world;
  JobBuilder job = Warmed(&world);
  for (int r = 0; r < 4; ++r) job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending);
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStall);
  EXPECT_TRUE(v.tie);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.culprits, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Collectives, UntrackedCompletionCountsOnceLaterWorkCompleted) {
  uint64_t world;
  JobBuilder job = Warmed(&world);
  for (int r = 0; r < 4; ++r) job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kUntracked);
  for (int r = 0; r < 4; ++r) job.Coll(r, world, OpType::kAllReduce, 1.1, Done::kCompleted);
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  EXPECT_EQ(First(a).cls, VerdictClass::kHealthy);
  EXPECT_TRUE(a.waiting.empty());
}

}  // namespace
}  // namespace ncclscope::testing
