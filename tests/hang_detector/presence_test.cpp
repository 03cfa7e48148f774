// Presence files (trace::kHeaderPresence): a rank whose process was started but never called NCCL
// is seen through the file its probe wrote at load, and is the culprit of the creation the others
// wait in; presence files that stand for no rank of the job are left out.
#include <gtest/gtest.h>

#include <cstdio>

#include "hang_detector/ingest/job_index.h"
#include "tests/hang_detector/analyze_helpers.h"
#include "tests/hang_detector/summary_ranks.h"
#include "trace/identity.h"

namespace ncclscope::testing {
namespace {

using hang_detector::ProcessState;

constexpr int kPresencePid = 4242;

std::string Hex(uint64_t id) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

// Ranks 0-2 inside the creation of a 4-rank world since 0.2 s; rank 3's process started at 0.1 s
// and never called NCCL: only its presence file is there.
struct NeverCalled {
  JobBuilder job{4};
  uint64_t world = trace::CommIdFromUniqueId("uid", 3);
  NeverCalled() {
    for (int r = 0; r < 3; ++r) job.InitInCall(r, world, 4, r, 0.2);
    job.RemoveFile(3);
    job.AddPresence(3, kPresencePid, 0.1);
    job.HeartbeatAll(5);
  }
};

void ExpectSummaryAgrees(const Verdict& v) {
  EXPECT_EQ(SummaryDisagreement(v.summary, v.culprits, v.tie), "") << v.summary;
}

TEST(Presence, AnAliveRankThatNeverCalledNcclIsTheCulprit) {
  NeverCalled c;
  const Analysis a = AnalyzeAt(c.job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kInitHang);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_EQ(v.victims, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(v.unseen.empty());
  EXPECT_FALSE(v.tie);
  EXPECT_EQ(v.summary,
            "rank 3 is alive (pid 4242 on this node) but never called NCCL: it never "
            "joined the creation of " +
                Hex(c.world) + "; ranks 0-2 wait inside it");
  ExpectSummaryAgrees(v);
  // Alive and maybe about to call: a suspect until the wait outlasts the job's normal pauses.
  EXPECT_FALSE(v.confirmed);
  EXPECT_NE(v.activity.find("rank 3: alive (pid 4242"), std::string::npos) << v.activity;
  EXPECT_NE(v.activity.find("never called NCCL since it started 4.9 s ago"), std::string::npos)
      << v.activity;
  EXPECT_TRUE(std::any_of(v.evidence.begin(), v.evidence.end(), [](const auto& e) {
    return e.rank == 3 && e.text.find("never called NCCL: pid 4242 on node-a started as rank 3") !=
                              std::string::npos;
  }));
  EXPECT_EQ(a.input.ranks_seen, 4);
  EXPECT_TRUE(a.input.missing_ranks.empty());
}

TEST(Presence, ItsStillHeartbeatIsNoFreeze) {
  // The presence file's heartbeat is its start, a minute ago: its running process is alive.
  NeverCalled c;
  c.job.HeartbeatAll(60);
  const Analysis a = AnalyzeAt(c.job, 60);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kInitHang);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
}

TEST(Presence, AStoppedProcessIsFrozen) {
  NeverCalled c;
  FakeProbe probe;
  probe.states[kPresencePid] = ProcessState::kStopped;
  const Analysis a = AnalyzeAt(c.job, 5, &probe);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kFrozen);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  ExpectSummaryAgrees(v);
}

TEST(Presence, AProcessGoneBeforeCallingNcclIsDead) {
  NeverCalled c;
  FakeProbe probe;
  probe.states[kPresencePid] = ProcessState::kGone;
  const Analysis a = AnalyzeAt(c.job, 5, &probe);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDead);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_EQ(v.summary, "rank 3 died or exited before joining it; ranks 0-2 wait");
  EXPECT_TRUE(v.confirmed);
  EXPECT_TRUE(std::any_of(v.evidence.begin(), v.evidence.end(), [](const auto& e) {
    return e.rank == 3 &&
           e.text.find("pid 4242 on node-a is gone and never called NCCL") != std::string::npos;
  }));
}

TEST(Presence, ANormalExitBeforeCallingNcclIsDead) {
  // A Python exception before init_process_group: the interpreter exits, atexit marks the file.
  NeverCalled c;
  c.job.PresenceFinished(kPresencePid);
  FakeProbe probe;
  probe.states[kPresencePid] = ProcessState::kGone;
  const Analysis a = AnalyzeAt(c.job, 5, &probe);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDead);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_TRUE(std::any_of(v.evidence.begin(), v.evidence.end(), [](const auto& e) {
    return e.rank == 3 &&
           e.text.find("exited (finished flag set) and never called NCCL") != std::string::npos;
  }));
}

TEST(Presence, PostMortemItEndedWithTheJob) {
  NeverCalled c;
  FakeProbe probe;
  for (int pid : {JobBuilder::Pid(0), JobBuilder::Pid(1), JobBuilder::Pid(2), kPresencePid}) {
    probe.states[pid] = ProcessState::kGone;
  }
  const Analysis a = AnalyzeAt(c.job, 30, &probe);
  const Verdict& v = First(a);
  EXPECT_TRUE(a.input.post_mortem);
  EXPECT_EQ(v.cls, VerdictClass::kInitHang);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_EQ(v.summary,
            "rank 3 never called NCCL (pid 4242 on this node): it never joined the "
            "creation of " +
                Hex(c.world) + "; ranks 0-2 wait inside it");
  ExpectSummaryAgrees(v);
}

TEST(Presence, AnotherHostsFileIsNamedWithItsHostAndNotCalledAlive) {
  // Read through a shared filesystem: its process cannot be checked from here.
  NeverCalled c;
  c.job.PresenceHost(kPresencePid, "node-b");
  const Analysis a = AnalyzeAt(c.job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kInitHang);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_EQ(v.summary,
            "rank 3 never called NCCL (pid 4242 on node-b): it never joined the "
            "creation of " +
                Hex(c.world) + "; ranks 0-2 wait inside it");
}

TEST(Presence, NamedBesideARankThatCalledSomethingElse) {
  // Rank 2 has its ring file (it called NCCL, but not this creation); rank 3 never called NCCL.
  JobBuilder job(4);
  const uint64_t world = trace::CommIdFromUniqueId("uid", 3);
  for (int r = 0; r < 2; ++r) job.InitInCall(r, world, 4, r, 0.2);
  job.RemoveFile(3);
  job.AddPresence(3, kPresencePid, 0.1);
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.culprits, (std::vector<int>{2, 3}));
  EXPECT_EQ(v.summary, "ranks 2,3 never joined the creation of " + Hex(world) +
                           "; rank 3 is alive (pid 4242 on this node) but never called NCCL; "
                           "ranks 0,1 wait inside it");
  ExpectSummaryAgrees(v);
}

TEST(Presence, ARankWithARingFileSpeaksForItself) {
  // A shell under srun started as rank 3 runs the Python process that called NCCL: the shell's
  // presence file stays, the ring file of the same rank is what counts (and rank 3 joined).
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kCompleted);
  job.AddPresence(3, kPresencePid, 0.0);
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  EXPECT_EQ(First(a).cls, VerdictClass::kHealthy);
  EXPECT_EQ(a.input.files, 4);
  EXPECT_EQ(a.input.ranks_seen, 4);
  for (const std::string& n : a.input.notes) {
    EXPECT_EQ(n.find("several files claim the same rank"), std::string::npos) << n;
  }
}

TEST(Presence, ALauncherStartedAsARankOfAnotherJobSizeIsNoRank) {
  // torchrun under srun: the agent of node 1 has SLURM_PROCID=1 of SLURM_NTASKS=2 in the job of 4
  // ranks. It is no rank 1 of this job: rank 1 stays unseen, and nobody is blamed.
  JobBuilder job(4);
  const uint64_t world = trace::CommIdFromUniqueId("uid", 3);
  for (int r : {0, 2, 3}) job.InitInCall(r, world, 4, r, 0.2);
  job.RemoveFile(1);
  job.AddPresence(1, kPresencePid, 0.0, /*world_size=*/2);
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kInitHang);
  EXPECT_TRUE(v.culprits.empty());
  EXPECT_EQ(v.unseen, std::vector<int>{1});
  EXPECT_NE(v.summary.find("the culprit is among them"), std::string::npos) << v.summary;
  EXPECT_TRUE(std::any_of(a.input.notes.begin(), a.input.notes.end(), [](const std::string& n) {
    return n.find("1 presence file(s) of processes started as ranks of a job of another size") !=
               std::string::npos &&
           n.find("rank 1 of 2; this job has 4 ranks") != std::string::npos;
  })) << ::testing::PrintToString(a.input.notes);
}

TEST(Presence, OfTwoForOneRankTheFirstStartedIsKept) {
  NeverCalled c;
  c.job.AddPresence(3, 5151, 0.05);
  const Analysis a = AnalyzeAt(c.job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_NE(v.summary.find("(pid 5151 on this node)"), std::string::npos) << v.summary;
  EXPECT_EQ(a.input.files, 4);
}

TEST(Presence, IndexKeepsOnlyPresencesThatStandForARank) {
  JobBuilder job(4);
  const uint64_t world = trace::CommIdFromUniqueId("uid", 3);
  for (int r = 0; r < 3; ++r) job.InitInCall(r, world, 4, r, 0.2);
  job.RemoveFile(3);
  job.AddPresence(3, 10, 0.1);
  job.AddPresence(2, 11, 0.0);                    // rank 2 has its ring file
  job.AddPresence(0, 12, 0.0, /*world_size=*/1);  // another job's size
  const hang_detector::JobIndex index(job.Build());
  ASSERT_EQ(index.files().size(), 4u);
  EXPECT_EQ(index.files()[3].snap->pid, 10);
  EXPECT_TRUE(index.missing_ranks().empty());
  EXPECT_EQ(index.world_size(), 4);
}

}  // namespace
}  // namespace ncclscope::testing
