// Dead, frozen and exited ranks, post-mortem analysis of a job its launcher killed, and input the
// correlator has to work around: missing files, wrapped rings, torn records.
#include <gtest/gtest.h>

#include "hang_detector/verdicts/verdict_text.h"
#include "tests/hang_detector/analyze_helpers.h"

namespace ncclscope::testing {
namespace {

using hang_detector::ProcessState;

// Ranks 0-2 wait in world allreduce #3 from t=1; rank 3 stopped after #2.
JobBuilder Stuck(uint64_t* world) {
  JobBuilder job(4);
  *world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    job.Coll(r, *world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.Coll(r, *world, OpType::kAllReduce, 0.2, Done::kCompleted);
  }
  for (int r = 0; r < 3; ++r) job.Coll(r, *world, OpType::kAllReduce, 1.0, Done::kPending);
  return job;
}

TEST(Liveness, GoneProcessIsDeadAndItsLastRecordIsEvidence) {
  uint64_t world;
  JobBuilder job = Stuck(&world);
  for (int r = 0; r < 3; ++r) job.Heartbeat(r, 6);
  job.Heartbeat(3, 0.3);
  FakeProbe probe;
  probe.states[JobBuilder::Pid(3)] = ProcessState::kGone;
  const Analysis a = AnalyzeAt(job, 6, &probe);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDead);
  EXPECT_EQ(v.comm_name, "world");
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_EQ(v.victims, (std::vector<int>{0, 1, 2}));
  bool last = false;
  for (const auto& e : v.evidence) last |= e.rank == 3 && e.text.find("last operation") == 0;
  EXPECT_TRUE(last);
}

// Rank 3 was killed after its AllReduce #2 completed on the device but before its background
// thread stamped the completion (a SIGKILL between a step's synchronize and the next poll): #2 is
// pending in its ring while every other rank completed it. Nobody waits there; the hang is #3,
// which rank 3 never issued, and the waiting view says so too (abort mode acts on it).
TEST(Liveness, ADeadRanksUnstampedCompletionDoesNotHideTheNextWait) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.Coll(r, world, OpType::kAllReduce, 0.2, r == 3 ? Done::kPending : Done::kCompleted);
  }
  for (int r = 0; r < 3; ++r) job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending);
  for (int r = 0; r < 3; ++r) job.Heartbeat(r, 6);
  job.Heartbeat(3, 0.3);
  FakeProbe probe;
  probe.states[JobBuilder::Pid(3)] = ProcessState::kGone;
  const Analysis a = AnalyzeAt(job, 6, &probe);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDead);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_EQ(v.victims, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(a.waiting.size(), 1u);
  EXPECT_EQ(a.waiting[0].seq, 3u);
  EXPECT_EQ(a.waiting[0].issued, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(a.waiting[0].not_issued, std::vector<int>{3});
}

TEST(Liveness, StoppedProcessIsFrozen) {
  uint64_t world;
  JobBuilder job = Stuck(&world);
  for (int r = 0; r < 3; ++r) job.Heartbeat(r, 6);
  job.Heartbeat(3, 0.3);
  FakeProbe probe;
  probe.states[JobBuilder::Pid(3)] = ProcessState::kStopped;
  const Analysis a = AnalyzeAt(job, 6, &probe);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kFrozen);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
}

TEST(Liveness, RunningProcessWithStaleHeartbeatIsFrozen) {
  uint64_t world;
  JobBuilder job = Stuck(&world);
  for (int r = 0; r < 3; ++r) job.Heartbeat(r, 6);
  job.Heartbeat(3, 0.3);
  const Analysis a = AnalyzeAt(job, 6);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kFrozen);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
}

TEST(Liveness, FreshHeartbeatMeansMissingNotFrozen) {
  uint64_t world;
  JobBuilder job = Stuck(&world);
  job.HeartbeatAll(6);  // rank 3's host thread is stuck elsewhere, its process is fine
  const Analysis a = AnalyzeAt(job, 6);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
}

TEST(Liveness, RankThatExitedWhileOthersWaitIsDead) {
  uint64_t world;
  JobBuilder job = Stuck(&world);
  for (int r = 0; r < 3; ++r) job.Heartbeat(r, 6);
  job.Heartbeat(3, 0.3);
  job.Finished(3);
  FakeProbe probe;
  probe.states[JobBuilder::Pid(3)] = ProcessState::kGone;
  const Analysis a = AnalyzeAt(job, 6, &probe);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDead);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
}

TEST(PostMortem, JobKilledByItsLauncherStillNamesTheMissingRank) {
  uint64_t world;
  JobBuilder job = Stuck(&world);
  job.HeartbeatAll(4.0);  // everyone beat until the launcher killed them all at t=4
  FakeProbe probe;
  for (int r = 0; r < 4; ++r) probe.states[JobBuilder::Pid(r)] = ProcessState::kGone;
  const Analysis a = AnalyzeAt(job, 3600, &probe);  // analysed an hour later
  const Verdict& v = First(a);
  EXPECT_TRUE(a.input.post_mortem);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_NEAR(v.since_s, 3.0, 0.01);  // relative to the job's end, not to now
  EXPECT_EQ(a.verdicts.size(), 1u);
}

TEST(PostMortem, RankThatFellSilentBeforeTheOthersIsDead) {
  uint64_t world;
  JobBuilder job = Stuck(&world);
  for (int r = 0; r < 3; ++r) job.Heartbeat(r, 4.0);
  job.Heartbeat(3, 0.3);
  FakeProbe probe;
  for (int r = 0; r < 4; ++r) probe.states[JobBuilder::Pid(r)] = ProcessState::kGone;
  const Analysis a = AnalyzeAt(job, 3600, &probe);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDead);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
}

TEST(PostMortem, FilesOfAnotherHostAreJudgedByHeartbeatOnly) {
  uint64_t world;
  JobBuilder job = Stuck(&world);
  job.HeartbeatAll(4.0);
  const Analysis a = hang_detector::Analyze(job.Build(), [] {
    hang_detector::AnalyzeOptions o;
    o.now_wall_ns = JobBuilder::Wall(3600);
    return o;  // no probe: nothing can be checked, every heartbeat is an hour old
  }());
  EXPECT_TRUE(a.input.post_mortem);
  EXPECT_EQ(First(a).cls, VerdictClass::kMissing);
  EXPECT_EQ(First(a).culprits, std::vector<int>{3});
}

// Absence is not guilt: rank 3's file may be on another node. Every rank seen waits, so the
// verdict names no culprit, says who is not seen, and how much of the job it saw.
TEST(Input, RankWithoutAFileIsUnseenNotBlamed) {
  uint64_t world;
  JobBuilder job = Stuck(&world);
  job.RemoveFile(3);
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeAt(job, 6);
  EXPECT_EQ(a.input.missing_ranks, std::vector<int>{3});
  EXPECT_EQ(a.input.files, 3);
  EXPECT_EQ(a.input.ranks_seen, 3);
  ASSERT_EQ(a.verdicts.size(), 1u);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_TRUE(v.culprits.empty());
  EXPECT_EQ(v.unseen, std::vector<int>{3});
  EXPECT_EQ(v.unseen_count, 1);
  EXPECT_EQ(v.victims, (std::vector<int>{0, 1, 2}));
  EXPECT_FALSE(v.tie);
  EXPECT_NE(v.summary.find("rank 3 (no ring file or digest here): the culprit is among them"),
            std::string::npos)
      << v.summary;
  const std::string text = hang_detector::RenderText(a, false);
  EXPECT_NE(text.find("saw 3 of 4 ranks"), std::string::npos) << text;
  EXPECT_NE(text.find("not seen here 3"), std::string::npos) << text;
}

TEST(Input, WrappedRingIsNotMistakenForMissingOperations) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  for (int i = 0; i < 10; ++i) {
    for (int r = 0; r < 2; ++r) job.Coll(r, world, OpType::kAllReduce, 0.1 * i, Done::kCompleted);
  }
  job.Wrap(0, 3);  // rank 0 only holds #8..#10
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  EXPECT_EQ(First(a).cls, VerdictClass::kHealthy);
  EXPECT_EQ(a.input.wrapped_ranks, std::vector<int>{0});
}

TEST(Input, WrappedRingStillShowsAHang) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  for (int i = 0; i < 10; ++i) {
    for (int r = 0; r < 2; ++r) job.Coll(r, world, OpType::kAllReduce, 0.1 * i, Done::kCompleted);
  }
  job.Coll(0, world, OpType::kAllReduce, 2.0, Done::kPending);
  job.Wrap(0, 2);
  job.Wrap(1, 4);
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeAt(job, 6);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_EQ(v.seq, 11u);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
}

// A broadcast's receivers complete without every member (the root's data passes them by): their
// completion does not excuse a member whose wrapped ring covers the wait and holds no #2.
TEST(Input, WrappedMemberIsJudgedWhenOnlyABroadcastsReceiversCompleted) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t solo = job.Comm("solo", {3});
  for (int r = 0; r < 4; ++r) job.Coll(r, world, OpType::kAllReduce, 0.0, Done::kCompleted);
  for (int i = 1; i <= 5; ++i) job.Coll(3, solo, OpType::kAllReduce, 0.1 * i, Done::kCompleted);
  job.Wrap(3, 5);  // its ring reaches back to 0.1 s, before the broadcast, and holds no world op
  job.Coll(0, world, OpType::kBroadcast, 1.0, Done::kPending);
  for (int r = 1; r < 3; ++r) job.Coll(r, world, OpType::kBroadcast, 1.0, Done::kCompleted);
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeAt(job, 6);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing) << v.summary;
  EXPECT_EQ(v.seq, 2u);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
}

TEST(Input, TornRecordsAreReported) {
  uint64_t world;
  JobBuilder job = Stuck(&world);
  job.Torn(1);
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeAt(job, 6);
  EXPECT_EQ(a.input.torn_ranks, std::vector<int>{1});
  EXPECT_EQ(First(a).culprits, std::vector<int>{3});
}

TEST(Input, NoFileAtAllIsUnusable) {
  trace::TraceSet empty;
  const Analysis a = hang_detector::Analyze(empty, {});
  EXPECT_FALSE(a.usable);
  EXPECT_EQ(hang_detector::ExitCode(a), 3);
}

}  // namespace
}  // namespace ncclscope::testing
