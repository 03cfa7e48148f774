// Stage two of a hang verdict: a wait is a suspect until the culprit is shown not to be working or
// the wait outlasts what the job has shown to be normal. What the user sees: a checkpoint-length
// pause says SUSPECT and exits 4 (nothing acts on it); a dead culprit or a wait far past the
// job's own pauses says HANG and exits 2.
#include <gtest/gtest.h>

#include "hang_detector/ingest/rank_digest.h"
#include "hang_detector/verdicts/verdict_text.h"
#include "tests/hang_detector/analyze_helpers.h"

namespace ncclscope::testing {
namespace {

using hang_detector::ProcessState;

// Four ranks on world: #1 and #2 complete at 0.1 s and 0.2 s. With `pause_s` > 0, #3 comes that
// long after #2 on every rank (a checkpoint every rank waited through). Then ranks 0-2 issue
// the next collective at `stuck_at` and rank 3 never does.
JobBuilder RankThreeNeverIssues(double pause_s, double stuck_at) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.Coll(r, world, OpType::kAllReduce, 0.2, Done::kCompleted);
    if (pause_s > 0) job.Coll(r, world, OpType::kAllReduce, 0.2 + pause_s, Done::kCompleted);
  }
  for (int r = 0; r < 3; ++r) job.Coll(r, world, OpType::kAllReduce, stuck_at, Done::kPending);
  return job;
}

Analysis At(JobBuilder job, double now, const FakeProbe* probe = nullptr) {
  job.HeartbeatAll(now);
  return AnalyzeAt(job, now, probe);
}

TEST(Confirmation, ACheckpointLengthWaitIsOnlyASuspect) {
  // Rank 3 spends 30 s on a checkpoint while the others wait in #3: the case that must not page.
  const Analysis a = At(RankThreeNeverIssues(0, 1.0), 31.0);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_FALSE(v.confirmed);
  EXPECT_DOUBLE_EQ(v.confirm_after_s, 60);
  EXPECT_TRUE(hang_detector::IsSuspect(v));
  EXPECT_EQ(hang_detector::ExitCode(a), 4);
  EXPECT_STREQ(hang_detector::StageName(a), "suspect");
  const std::string text = hang_detector::RenderText(a, false);
  EXPECT_NE(text.find("SUSPECT (missing) comm world"), std::string::npos) << text;
  EXPECT_EQ(text.find("HANG"), std::string::npos) << text;
  EXPECT_NE(text.find("confirmed at 60 s"), std::string::npos) << text;
}

TEST(Confirmation, AWaitPastTheFloorIsConfirmed) {
  const Analysis a = At(RankThreeNeverIssues(0, 1.0), 62.0);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_TRUE(v.confirmed);
  EXPECT_NE(v.confirmed_by.find("waited 61 s"), std::string::npos) << v.confirmed_by;
  EXPECT_EQ(hang_detector::ExitCode(a), 2);
  EXPECT_STREQ(hang_detector::StageName(a), "hang");
  EXPECT_NE(hang_detector::RenderText(a, false).find("HANG (missing)"), std::string::npos);
}

TEST(Confirmation, TheJobsOwnLongestPauseRaisesTheThreshold) {
  // The job already paused 40 s once (every rank's records show it): a 70 s wait is 1.75 x that,
  // not yet 3 x.
  const JobBuilder job = RankThreeNeverIssues(40, 41.0);
  const Analysis suspect = At(job, 111.0);
  ASSERT_EQ(First(suspect).cls, VerdictClass::kMissing);
  EXPECT_FALSE(First(suspect).confirmed);
  EXPECT_NEAR(First(suspect).confirm_after_s, 120, 0.01);
  EXPECT_NE(First(suspect).confirmed_by.find("3 x the longest pause this job has shown, 40 s"),
            std::string::npos)
      << First(suspect).confirmed_by;
  const Analysis confirmed = At(job, 162.0);
  EXPECT_TRUE(First(confirmed).confirmed);
}

TEST(Confirmation, TheCeilingBoundsWhatTheJobTeaches) {
  const JobBuilder job = RankThreeNeverIssues(300, 301.0);
  const Analysis a = At(job, 400.0);
  EXPECT_NEAR(First(a).confirm_after_s, 600, 0.01);
  EXPECT_NE(First(a).confirmed_by.find("the ceiling"), std::string::npos);
  EXPECT_TRUE(First(At(job, 902.0)).confirmed);
}

TEST(Confirmation, ADeadCulpritIsConfirmedAtOnce) {
  FakeProbe probe;
  probe.states[JobBuilder::Pid(3)] = ProcessState::kGone;
  JobBuilder job = RankThreeNeverIssues(0, 1.0);
  job.Heartbeat(3, 0.2);
  for (int r = 0; r < 3; ++r) job.Heartbeat(r, 4.0);
  const Analysis a = AnalyzeAt(job, 4.0, &probe);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDead);
  EXPECT_TRUE(v.confirmed);
  EXPECT_NE(v.confirmed_by.find("gone"), std::string::npos);
  EXPECT_EQ(hang_detector::ExitCode(a), 2);
}

TEST(Confirmation, AStoppedCulpritIsConfirmedAtOnce) {
  FakeProbe probe;
  probe.states[JobBuilder::Pid(3)] = ProcessState::kStopped;
  const Analysis a = At(RankThreeNeverIssues(0, 1.0), 4.0, &probe);
  EXPECT_EQ(First(a).cls, VerdictClass::kFrozen);
  EXPECT_TRUE(First(a).confirmed);
}

TEST(Confirmation, ASilentButRunningCulpritIsFrozenOnlyAfterALongSilence) {
  // Rank 3's process runs but its heartbeat is 5 s old: a starved machine can do that.
  JobBuilder job = RankThreeNeverIssues(0, 1.0);
  for (int r = 0; r < 3; ++r) job.Heartbeat(r, 9.0);
  job.Heartbeat(3, 4.0);
  const Analysis a = AnalyzeAt(job, 9.0);
  EXPECT_EQ(First(a).cls, VerdictClass::kFrozen);
  EXPECT_FALSE(First(a).confirmed);
  EXPECT_EQ(hang_detector::ExitCode(a), 4);
  // Silent for 31 s: frozen beyond doubt.
  JobBuilder later = RankThreeNeverIssues(0, 1.0);
  for (int r = 0; r < 3; ++r) later.Heartbeat(r, 40.0);
  later.Heartbeat(3, 9.0);
  const Analysis b = AnalyzeAt(later, 40.0);
  EXPECT_EQ(First(b).cls, VerdictClass::kFrozen);
  EXPECT_TRUE(First(b).confirmed);
}

TEST(Confirmation, RanksThatDisagreeAreConfirmedAtOnce) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  job.Coll(0, world, OpType::kAllGather, 1.0, Done::kPending);
  for (int r = 1; r < 4; ++r) job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending);
  const Analysis a = At(job, 4.0);
  EXPECT_EQ(First(a).cls, VerdictClass::kDesync);
  EXPECT_TRUE(First(a).confirmed);
  EXPECT_EQ(hang_detector::ExitCode(a), 2);
}

TEST(Confirmation, AJobThatEndedWithTheWaitOutstandingIsConfirmed) {
  hang_detector::AnalyzeOptions o;
  o.job_ended = true;
  JobBuilder job = RankThreeNeverIssues(0, 1.0);
  job.HeartbeatAll(6.0);
  const Analysis a = AnalyzeWith(job, 6.0, o);
  EXPECT_EQ(First(a).cls, VerdictClass::kMissing);
  EXPECT_TRUE(First(a).confirmed);
  EXPECT_NE(First(a).confirmed_by.find("job ended"), std::string::npos);
}

TEST(Confirmation, ALongOperationEveryMemberRunsIsOnlyASuspect) {
  // One 20 s allreduce that every rank started: nothing says it is not moving data.
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    job.ProfilerAttach(r, world, 0.05);
    job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.DeviceStart(r, world, 1, 0.1);
    job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending);
    job.DeviceStart(r, world, 2, 1.0);
  }
  const Analysis a = At(job, 21.0);
  EXPECT_EQ(First(a).cls, VerdictClass::kDeviceStall);
  EXPECT_FALSE(First(a).confirmed);
  EXPECT_EQ(hang_detector::ExitCode(a), 4);
}

TEST(Confirmation, TheVerdictSaysWhatTheCulpritIsDoing) {
  const Analysis a = At(RankThreeNeverIssues(0, 1.0), 9.2);
  const std::string& activity = First(a).activity;
  EXPECT_NE(activity.find("rank 3: alive (pid 1003)"), std::string::npos) << activity;
  EXPECT_NE(activity.find("outside NCCL for 9.0 s since world allreduce #2"), std::string::npos)
      << activity;
  EXPECT_NE(hang_detector::RenderText(a, false).find("culprit now: rank 3: alive"),
            std::string::npos);
}

TEST(Confirmation, ConfirmedHangsComeBeforeSuspects) {
  // Rank 3 never issued world #3 (a 10 s suspect); rank 2 of another group died.
  FakeProbe probe;
  JobBuilder job(6);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t side = job.Comm("side", {4, 5});
  for (int r = 0; r < 3; ++r) job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending);
  job.Coll(4, side, OpType::kAllReduce, 1.0, Done::kPending);
  probe.states[JobBuilder::Pid(5)] = ProcessState::kGone;
  for (int r = 0; r < 5; ++r) job.Heartbeat(r, 11.0);
  job.Heartbeat(5, 0.5);
  const Analysis a = AnalyzeAt(job, 11.0, &probe);
  ASSERT_GE(a.verdicts.size(), 2u);
  EXPECT_TRUE(a.verdicts[0].confirmed);
  EXPECT_EQ(a.verdicts[0].culprits, std::vector<int>{5});
  EXPECT_TRUE(hang_detector::IsSuspect(a.verdicts[1]));
  EXPECT_EQ(hang_detector::ExitCode(a), 2);
}

// A digest keeps a rank's oldest record and its newest ones: the time between them is records left
// out, not a pause. Counted as one, a busy job's threshold grew to the ceiling (seen with full
// default rings: "3 x the longest pause this job has shown, 196 s" for a job that never paused).
TEST(Confirmation, RecordsLeftOutOfADigestAreNotAPause) {
  JobBuilder job(1);
  const uint64_t world = job.Comm("world", {0});
  for (int i = 0; i < 300; ++i) job.Coll(0, world, OpType::kAllReduce, 0.1 * i, Done::kCompleted);
  const hang_detector::RankFile whole = CompactFiles(job.Build()).front();
  hang_detector::DigestCut cut = hang_detector::CutForDigest(whole, {});
  ASSERT_GT(cut.omitted, 200u);
  EXPECT_LT(whole.LongestPauseNs(), 200'000'000);
  // The cut's own records, without what it carries from the whole file: still no 20 s pause.
  cut.file.pause_before_ns = 0;
  EXPECT_LT(cut.file.LongestPauseNs(), 200'000'000);
}

// NCCLSCOPE_ON_HANG=abort: rank 0's watchdog confirmed the hang at 5 s and aborted world; the
// device then reported its #3 complete and its process exited. The next look (another rank's
// watchdog, the exporter, analyze) must read the same hang: rank 0 still issued and waits in #3,
// it is no culprit for exiting, and its aborted wait is no pause of the job (counted, it would
// put the threshold at 3 x 5 s and turn the hang back into a suspect).
TEST(Confirmation, AWaitTheWatchdogAbortedIsNeitherAPauseNorProgress) {
  JobBuilder job = RankThreeNeverIssues(0, 1.0);
  const uint64_t comm = job.Build().files[0].comms.front().id;  // world
  job.WatchdogAbort(0, comm, 6.0);
  job.Finished(0);
  FakeProbe probe;
  probe.states[JobBuilder::Pid(0)] = ProcessState::kGone;
  for (int r = 1; r < 4; ++r) job.Heartbeat(r, 9.0);
  job.Heartbeat(0, 6.1);
  hang_detector::AnalyzeOptions o;
  o.confirm_floor_s = 5;
  const Analysis a = AnalyzeWith(job, 9.0, o, &probe);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_TRUE(v.confirmed) << v.confirmed_by;
  EXPECT_TRUE(v.confirmed_by_time);
  EXPECT_DOUBLE_EQ(v.confirm_after_s, 5) << "the aborted 5 s wait is not the job's longest pause";
  for (const Verdict& other : a.verdicts) {
    EXPECT_NE(other.cls, VerdictClass::kDead) << "rank 0 exited because it was aborted";
  }
  ASSERT_FALSE(a.waiting.empty());
  EXPECT_EQ(a.waiting[0].issued, (std::vector<int>{0, 1, 2})) << "rank 0 still waits in #3";
  EXPECT_NE(v.activity.find("rank 3"), std::string::npos);
  EXPECT_EQ(hang_detector::ExitCode(a), 2);
}

}  // namespace
}  // namespace ncclscope::testing
