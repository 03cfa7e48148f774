// One node's view of a job spread over several: its ranks' files, not the others'. Absence is not
// guilt: a rank whose data this node lacks is named as unseen, never as a culprit and never counted
// as having issued anything, and the verdict says how much of the job it saw.
#include <gtest/gtest.h>

#include "hang_detector/verdicts/verdict_text.h"
#include "tests/hang_detector/analyze_helpers.h"

namespace ncclscope::testing {
namespace {

constexpr int kTwoNodeRanks = 8;

// Two nodes of four ranks; rank 5 never issues allreduce #3 on world, the others wait in it.
JobBuilder MissingOnNodeB(uint64_t* world) {
  JobBuilder job(kTwoNodeRanks);
  *world = job.Comm("world", {0, 1, 2, 3, 4, 5, 6, 7});
  for (int i = 0; i < 2; ++i) {
    for (int r = 0; r < kTwoNodeRanks; ++r)
      job.Coll(r, *world, OpType::kAllReduce, 0.1 * i, Done::kCompleted);
  }
  for (int r = 0; r < kTwoNodeRanks; ++r) {
    if (r != 5) job.Coll(r, *world, OpType::kAllReduce, 1.0, Done::kPending);
  }
  job.HeartbeatAll(8);
  return job;
}

void KeepOnly(JobBuilder* job, int first, int last) {
  for (int r = 0; r < kTwoNodeRanks; ++r) {
    if (r < first || r > last) job->RemoveFile(r);
  }
}

TEST(NodeView, NodeWithoutTheCulpritBlamesNobody) {
  uint64_t world;
  JobBuilder job = MissingOnNodeB(&world);
  KeepOnly(&job, 0, 3);
  const Analysis a = AnalyzeAt(job, 8);
  ASSERT_EQ(a.verdicts.size(), 1u) << hang_detector::RenderText(a, true);
  const Verdict& v = First(a);
  // Not a device-stall tie among its own waiting ranks, not "missing" blaming ranks 4-7.
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_TRUE(v.culprits.empty());
  EXPECT_EQ(v.victims, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(v.unseen, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(a.input.ranks_seen, 4);
  EXPECT_EQ(a.input.world_size, 8);
  // The waiting view does not count the unseen ranks as having issued it, nor as not issuing.
  ASSERT_EQ(a.waiting.size(), 1u);
  EXPECT_TRUE(a.waiting[0].not_issued.empty());
  EXPECT_EQ(a.waiting[0].unseen, 4);
  EXPECT_EQ(v.summary.find("every rank"), std::string::npos) << v.summary;
}

TEST(NodeView, NodeWithTheCulpritNamesItAndListsTheUnseen) {
  uint64_t world;
  JobBuilder job = MissingOnNodeB(&world);
  KeepOnly(&job, 4, 7);
  const Analysis a = AnalyzeAt(job, 8);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_EQ(v.culprits, std::vector<int>{5});
  EXPECT_EQ(v.victims, (std::vector<int>{4, 6, 7}));
  EXPECT_EQ(v.unseen, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_NE(v.summary.find("ranks 0-3 not seen here"), std::string::npos) << v.summary;
}

TEST(NodeView, WholeJobGivesTheSameCulpritWithNothingUnseen) {
  uint64_t world;
  const Analysis a = AnalyzeAt(MissingOnNodeB(&world), 8);
  const Verdict& v = First(a);
  EXPECT_EQ(v.culprits, std::vector<int>{5});
  EXPECT_TRUE(v.unseen.empty());
  EXPECT_EQ(v.unseen_count, 0);
  EXPECT_EQ(a.input.ranks_seen, kTwoNodeRanks);
}

// Once a member completed #N every member issued it: ranks of another node are then no suspects
// for not issuing, and the device stall on the ranks seen stands.
TEST(NodeView, CompletedSomewhereMeansIssuedEverywhere) {
  JobBuilder job(kTwoNodeRanks);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3, 4, 5, 6, 7});
  job.Coll(0, world, OpType::kAllReduce, 1.0, Done::kPending);
  for (int r = 1; r < 4; ++r) job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kCompleted);
  job.HeartbeatAll(8);
  KeepOnly(&job, 0, 3);
  const Analysis a = AnalyzeAt(job, 8);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStall);
  EXPECT_EQ(v.culprits, std::vector<int>{0});
  EXPECT_TRUE(v.unseen.empty());
}

// A broadcast's receivers complete once the root's data passed by, whether or not a rank further
// down the chain issued it: their completion proves nothing about the unseen ranks, and the
// waiting root is no device-stall culprit (seen: node0 of a 2-node job blamed rank 0 for
// broadcast #2 that rank 5 never issued).
TEST(NodeView, ABroadcastCompletedOnReceiversDoesNotProveTheUnseenIssuedIt) {
  JobBuilder job(kTwoNodeRanks);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3, 4, 5, 6, 7});
  job.Coll(0, world, OpType::kBroadcast, 1.0, Done::kPending);
  for (int r = 1; r < 4; ++r) job.Coll(r, world, OpType::kBroadcast, 1.0, Done::kCompleted);
  job.HeartbeatAll(8);
  KeepOnly(&job, 0, 3);
  const Analysis a = AnalyzeAt(job, 8);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing) << hang_detector::RenderText(a, true);
  EXPECT_TRUE(v.culprits.empty());
  EXPECT_EQ(v.victims, std::vector<int>{0});
  EXPECT_EQ(v.unseen, (std::vector<int>{4, 5, 6, 7}));
}

// A send to a peer on another node: nothing here says the peer did not post its receive.
TEST(NodeView, SendToAnUnseenPeerBlamesNobody) {
  JobBuilder job(4);
  const uint64_t pp = job.Comm("pp", {0, 1, 2, 3});
  job.Send(1, pp, 2, 1.0, Done::kPending);
  job.HeartbeatAll(8);
  job.RemoveFile(2);
  job.RemoveFile(3);
  const Analysis a = AnalyzeAt(job, 8);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kP2PDeadlock);
  EXPECT_TRUE(v.culprits.empty());
  EXPECT_EQ(v.unseen_count, 1);
  EXPECT_NE(v.summary.find("not seen here"), std::string::npos) << v.summary;
}

// A shared trace directory on a network filesystem: another host's mmap'd writes arrive late, so
// its heartbeat looks old while the rank runs. Only a silence past foreign_stale_s is death.
TEST(NodeView, AnotherHostsFileIsNotDeadForALateHeartbeat) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
  job.HeartbeatAll(30);
  job.Host(2, "node-b");
  job.Host(3, "node-b");
  job.Heartbeat(2, 20);  // 10 s late: NFS writeback, not death
  job.Heartbeat(3, 20);
  const Analysis late = AnalyzeAt(job, 30);
  EXPECT_EQ(First(late).cls, VerdictClass::kHealthy) << hang_detector::RenderText(late, true);

  hang_detector::AnalyzeOptions strict;
  strict.foreign_stale_s = 5;
  const Analysis a = AnalyzeWith(job, 30, strict);
  std::vector<int> dead;
  for (const Verdict& v : a.verdicts) {
    if (v.cls == VerdictClass::kDead) dead.insert(dead.end(), v.culprits.begin(), v.culprits.end());
  }
  EXPECT_EQ(dead, (std::vector<int>{2, 3}));
}

// A rank read from its node's digest is judged by that node's look at its process, not by this
// host's probe (a pid means nothing here), and the input says how many ranks came from digests.
TEST(NodeView, ARankFromADigestIsJudgedByItsOwnNodesProcessCheck) {
  uint64_t world;
  JobBuilder job = MissingOnNodeB(&world);
  std::vector<hang_detector::RankFile> files = CompactFiles(job.Build());
  for (size_t i = 0; i < files.size(); ++i) {
    if (files[i].rank >= 4) {
      files[i].remote = hang_detector::RemoteObservation{
          files[i].rank == 5 ? hang_detector::ProcessState::kGone
                             : hang_detector::ProcessState::kRunning,
          "http://node-b:9478/digest"};
    }
  }
  hang_detector::AnalyzeOptions o;
  o.now_wall_ns = JobBuilder::Wall(8);
  const FakeProbe running;  // would call every pid of kHost running
  o.probe = &running;
  const Analysis a =
      hang_detector::Analyze(hang_detector::JobIndex::FromFiles(std::move(files), {}), o);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDead);
  EXPECT_EQ(v.culprits, std::vector<int>{5});
  EXPECT_EQ(a.input.digest_ranks, 4);
  const std::string text = hang_detector::RenderText(a, false);
  EXPECT_NE(text.find("input: 4 ring file(s), 4 rank(s) from digests; saw 8 of 8 ranks"),
            std::string::npos)
      << text;
  // The evidence says who checked the process: the rank's own node, through its digest.
  EXPECT_NE(text.find("is gone (its node's digest, http://node-b:9478/digest)"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace ncclscope::testing
