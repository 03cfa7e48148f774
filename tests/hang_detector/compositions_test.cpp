// Faults that come together: two culprits at one collective, chains of send/recv waits, culprits
// inside the split communicators of a larger job, and mismatches after rings wrapped. Each test
// states the trace the faults leave and asserts who is named, and who only waits.
#include <gtest/gtest.h>

#include "hang_detector/verdicts/verdict_text.h"
#include "tests/hang_detector/analyze_helpers.h"
#include "tests/hang_detector/summary_ranks.h"

namespace ncclscope::testing {
namespace {

const Verdict* Find(const Analysis& a, VerdictClass cls) {
  for (const Verdict& v : a.verdicts) {
    if (v.cls == cls) return &v;
  }
  return nullptr;
}

void ExpectSummariesAgree(const Analysis& a) {
  for (const Verdict& v : a.verdicts) {
    EXPECT_EQ(SummaryDisagreement(v.summary, v.culprits, v.tie), "") << v.summary;
  }
}

// Eight ranks, two completed allreduces on world.
JobBuilder Warmed8(uint64_t* world) {
  JobBuilder job(8);
  *world = job.Comm("world", {0, 1, 2, 3, 4, 5, 6, 7});
  for (int r = 0; r < 8; ++r) {
    job.Coll(r, *world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.Coll(r, *world, OpType::kAllReduce, 0.2, Done::kCompleted);
  }
  return job;
}

TEST(TwoCulprits, ADesyncAndASilentRankAtOneCollectiveAreBothNamed) {
  // At #3 rank 0 passes twice the count, ranks 1-6 issue the right allreduce, rank 7 never issues
  // it (busy elsewhere: its host thread is alive and waits in nothing).
  uint64_t world;
  JobBuilder job = Warmed8(&world);
  job.Coll(0, world, OpType::kAllReduce, 1.0, Done::kPending, 512);
  for (int r = 1; r < 7; ++r) job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending);
  job.HeartbeatAll(13);
  const Analysis a = AnalyzeAt(job, 13);  // live, default thresholds
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  ASSERT_EQ(a.verdicts.size(), 2u);
  // The disagreement is proof: it leads, confirmed.
  const Verdict& desync = a.verdicts[0];
  EXPECT_EQ(desync.cls, VerdictClass::kDesync);
  EXPECT_TRUE(desync.confirmed);
  EXPECT_EQ(desync.seq, 3u);
  EXPECT_EQ(desync.culprits, std::vector<int>{0});
  EXPECT_EQ(desync.victims, (std::vector<int>{1, 2, 3, 4, 5, 6}));
  // The silent rank is named too, at the same collective; a rank busy elsewhere for 12 s is a
  // suspect until the wait outlasts what the job has shown to be normal.
  const Verdict& missing = a.verdicts[1];
  EXPECT_EQ(missing.cls, VerdictClass::kMissing);
  EXPECT_EQ(missing.comm_id, world);
  EXPECT_EQ(missing.seq, 3u);
  EXPECT_EQ(missing.culprits, std::vector<int>{7});
  EXPECT_EQ(missing.victims, (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(Mentions(missing, 7));
  // Its text says what each culprit did: rank 7 never issued #3, rank 0 issued something else.
  EXPECT_NE(missing.summary.find("rank 7 never issued it"), std::string::npos) << missing.summary;
  EXPECT_NE(missing.summary.find("desync"), std::string::npos) << missing.summary;
  EXPECT_EQ(hang_detector::ExitCode(a), 2);
  ExpectSummariesAgree(a);
}

TEST(TwoCulprits, ASilentRankThatWaitsElsewhereStaysAVictim) {
  // The same desync at world #2, and ranks 6 and 7 never issue it; but rank 7 cannot: it waits in
  // tp #2, where rank 6 never came. Rank 6 is the second culprit, rank 7 only waits.
  JobBuilder job(8);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3, 4, 5, 6, 7});
  const uint64_t tp = job.Comm("tp", {6, 7}, world, 1);
  for (int r = 0; r < 8; ++r) job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
  for (int r : {6, 7}) job.Coll(r, tp, OpType::kAllReduce, 0.2, Done::kCompleted);
  job.Coll(7, tp, OpType::kAllReduce, 0.5, Done::kPending);
  job.Coll(0, world, OpType::kAllReduce, 1.0, Done::kPending, 512);
  for (int r = 1; r < 6; ++r) job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending);
  job.HeartbeatAll(13);
  const Analysis a = AnalyzeWith(job, 13, ConfirmAtOnce());
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  ASSERT_EQ(a.verdicts.size(), 2u);
  EXPECT_EQ(First(a).cls, VerdictClass::kDesync);
  EXPECT_EQ(First(a).culprits, std::vector<int>{0});
  const Verdict* missing = Find(a, VerdictClass::kMissing);
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->culprits, std::vector<int>{6});
  EXPECT_EQ(missing->victims, (std::vector<int>{1, 2, 3, 4, 5, 7}));
  ExpectSummariesAgree(a);
}

// Four pipeline stages on one communicator; one micro-batch went through every stage.
JobBuilder Pipeline(int stages, uint64_t* pp) {
  JobBuilder job(stages);
  std::vector<int> ranks;
  for (int r = 0; r < stages; ++r) ranks.push_back(r);
  *pp = job.Comm("pp", ranks);
  for (int r = 0; r + 1 < stages; ++r) {
    job.Send(r, *pp, r + 1, 0.1, Done::kCompleted);
    job.Recv(r + 1, *pp, r, 0.1, Done::kCompleted);
  }
  return job;
}

TEST(P2PChain, AStageBlockedInItsOwnReceiveIsAVictimNotACulprit) {
  // Stage 1 stops before the next micro-batch. Stage 0 waits in its send to 1; stage 2 waits in
  // its receive from 1 and, its host waiting for that, never posts its send to 3; stage 3 waits
  // in its receive from 2. Only stage 1 is the cause.
  uint64_t pp;
  JobBuilder job = Pipeline(4, &pp);
  job.Send(0, pp, 1, 1.0, Done::kPending);
  job.Recv(2, pp, 1, 1.0, Done::kPending);
  job.Recv(3, pp, 2, 1.0, Done::kPending);
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeWith(job, 6, ConfirmAtOnce());
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  ASSERT_EQ(a.verdicts.size(), 1u);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kP2PDeadlock);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
  EXPECT_EQ(v.victims, (std::vector<int>{0, 2, 3}));
  EXPECT_FALSE(v.tie);
  // The chain is told: stage 2 did not send because it waits itself.
  EXPECT_NE(v.summary.find("rank 2"), std::string::npos) << v.summary;
  ExpectSummariesAgree(a);
}

TEST(P2PChain, ALongChainNamesOnlyItsHeadAtSixtyFourStages) {
  uint64_t pp;
  JobBuilder job = Pipeline(64, &pp);
  job.Send(0, pp, 1, 1.0, Done::kPending);
  for (int r = 2; r < 64; ++r) job.Recv(r, pp, r - 1, 1.0 + r * 0.001, Done::kPending);
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeWith(job, 6, ConfirmAtOnce());
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  ASSERT_EQ(a.verdicts.size(), 1u);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kP2PDeadlock);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
  EXPECT_EQ(v.victims.size(), 63u);
  ExpectSummariesAgree(a);
}

TEST(P2PChain, AStageStuckInItsOwnStraySendIsTheCulprit) {
  // Stage 1 sends to stage 3 instead of 2 (a wrong peer) and waits there: stage 2's receive never
  // gets its send. Stage 1 waits, but on its own mistake: it stays the culprit.
  uint64_t pp;
  JobBuilder job = Pipeline(4, &pp);
  job.Send(1, pp, 3, 1.0, Done::kPending);
  job.Recv(2, pp, 1, 1.0, Done::kPending);
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeWith(job, 6, ConfirmAtOnce());
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kP2PDeadlock);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
  EXPECT_EQ(v.victims, std::vector<int>{2});
  ExpectSummariesAgree(a);
}

TEST(P2PChain, TwoRanksReceivingFromEachOtherAreBothNamed) {
  // Each waits in a receive whose send the other never posts (both receive first): neither is
  // only a victim of the other.
  JobBuilder job(2);
  const uint64_t pp = job.Comm("pp", {0, 1});
  for (int r = 0; r < 2; ++r) {
    job.Send(r, pp, 1 - r, 0.1, Done::kCompleted);
    job.Recv(r, pp, 1 - r, 0.1, Done::kCompleted);
  }
  for (int r = 0; r < 2; ++r) job.Recv(r, pp, 1 - r, 1.0, Done::kPending);
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeWith(job, 6, ConfirmAtOnce());
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kP2PDeadlock);
  EXPECT_EQ(v.culprits, (std::vector<int>{0, 1}));
  ExpectSummariesAgree(a);
}

// 64 ranks as tp 8 x dp 8: tp groups are blocks of 8 (split 1), dp groups every 8th rank
// (split 2). Each step is tp allreduce, then dp reduce-scatter, then world allreduce; two steps
// completed everywhere.
struct Job64 {
  JobBuilder job{64};
  uint64_t world = 0;
  std::vector<uint64_t> tp, dp;
  Job64() {
    std::vector<int> all;
    for (int r = 0; r < 64; ++r) all.push_back(r);
    world = job.Comm("world", all);
    for (int g = 0; g < 8; ++g) {
      std::vector<int> block, stride;
      for (int i = 0; i < 8; ++i) {
        block.push_back(g * 8 + i);
        stride.push_back(g + 8 * i);
      }
      tp.push_back(job.Comm("tp", block, world, 1));
      dp.push_back(job.Comm("dp", stride, world, 2));
    }
    for (int step = 0; step < 2; ++step) {
      const double t = 0.1 + step * 0.1;
      for (int r = 0; r < 64; ++r) {
        job.Coll(r, tp[r / 8], OpType::kAllReduce, t, Done::kCompleted);
        job.Coll(r, dp[r % 8], OpType::kReduceScatter, t + 0.01, Done::kCompleted);
        job.Coll(r, world, OpType::kAllReduce, t + 0.02, Done::kCompleted);
      }
    }
  }
};

TEST(SplitCulprits, ARankThatStopsInsideOneTensorGroupOfSixtyFourIsTheOnlyCulprit) {
  // Rank 37 stops before tp #3. Its tp peers wait there; the other tp groups go on and wait in
  // dp #3 for the peers of 37's group; everyone else waits in world #3.
  Job64 j;
  for (int r = 0; r < 64; ++r) {
    if (r == 37) continue;
    const bool stuck_group = r / 8 == 37 / 8;
    j.job.Coll(r, j.tp[r / 8], OpType::kAllReduce, 1.0,
               stuck_group ? Done::kPending : Done::kCompleted);
    // Every dp group holds one rank of tp group 4, which waits in tp #3: none completes dp #3.
    if (!stuck_group) j.job.Coll(r, j.dp[r % 8], OpType::kReduceScatter, 1.1, Done::kPending);
  }
  j.job.HeartbeatAll(10);
  const Analysis a = AnalyzeWith(j.job, 10, ConfirmAtOnce());
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  ASSERT_EQ(a.verdicts.size(), 1u);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_EQ(v.comm_id, j.tp[4]);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.culprits, std::vector<int>{37});
  ExpectSummariesAgree(a);
}

TEST(SplitCulprits, CulpritsInTwoTensorGroupsOfSixtyFourAreEachNamed) {
  // Ranks 3 and 50 each stop before tp #3 of their own group; every other tp group completes it.
  Job64 j;
  for (int r = 0; r < 64; ++r) {
    if (r == 3 || r == 50) continue;
    const bool stuck_group = r / 8 == 0 || r / 8 == 6;
    j.job.Coll(r, j.tp[r / 8], OpType::kAllReduce, 1.0,
               stuck_group ? Done::kPending : Done::kCompleted);
  }
  j.job.HeartbeatAll(10);
  const Analysis a = AnalyzeWith(j.job, 10, ConfirmAtOnce());
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  std::vector<int> named;
  for (const Verdict& v : a.verdicts) {
    EXPECT_EQ(v.cls, VerdictClass::kMissing);
    named.insert(named.end(), v.culprits.begin(), v.culprits.end());
  }
  std::sort(named.begin(), named.end());
  named.erase(std::unique(named.begin(), named.end()), named.end());
  EXPECT_EQ(named, (std::vector<int>{3, 50}));
  ExpectSummariesAgree(a);
}

TEST(SplitCulprits, ADesyncInsideOneDataGroupOfSixtyFour) {
  // At dp #3 rank 42 (dp group 2) passes another count; its seven dp peers outvote it.
  Job64 j;
  for (int r = 0; r < 64; ++r) {
    j.job.Coll(r, j.tp[r / 8], OpType::kAllReduce, 1.0, Done::kCompleted);
    const bool group = r % 8 == 42 % 8;
    j.job.Coll(r, j.dp[r % 8], OpType::kReduceScatter, 1.1,
               group ? Done::kPending : Done::kCompleted, r == 42 ? 512 : 256);
  }
  j.job.HeartbeatAll(10);
  const Analysis a = AnalyzeWith(j.job, 10, ConfirmAtOnce());
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDesync);
  EXPECT_EQ(v.comm_id, j.dp[2]);
  EXPECT_EQ(v.culprits, std::vector<int>{42});
  EXPECT_EQ(v.victims, (std::vector<int>{2, 10, 18, 26, 34, 50, 58}));
  ExpectSummariesAgree(a);
}

// An all-to-all(v) as grouped sends and receives where rank 1 got its counts wrong: every pair
// with rank 1 disagrees, every other pair agrees. Each pair alone is a tie; all of them together
// name rank 1, and each of its peers is a victim.
TEST(SplitCulprits, TheRankInEveryPairThatDisagreesIsTheCulprit) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  for (int s = 0; s < 4; ++s) {
    for (int d = 0; d < 4; ++d) {
      if (s == d) continue;
      job.Send(s, world, d, 1.0, Done::kPending).count = s == 1 ? 512 : 256;
      job.Recv(d, world, s, 1.0, Done::kPending).count = d == 1 ? 512 : 256;
    }
  }
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeWith(job, 6, ConfirmAtOnce());
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDesync);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
  EXPECT_FALSE(v.tie);
  EXPECT_NE(v.summary.find("rank 1 is in all"), std::string::npos) << v.summary;
  // Only what a send and its receive must agree on: not that one is a send, the other a receive.
  EXPECT_NE(v.summary.find("disagree (count "), std::string::npos) << v.summary;
  EXPECT_EQ(v.summary.find("type send vs recv"), std::string::npos) << v.summary;
  ExpectSummariesAgree(a);
}

// A pipeline stage between two peers that each sent it a wrong count: two pairs that disagree
// share rank 1, but two are not enough to blame it; each stays a tie.
TEST(SplitCulprits, TwoPairsThatDisagreeStayTies) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  job.Send(0, world, 1, 1.0, Done::kPending).count = 512;
  job.Recv(1, world, 0, 1.0, Done::kPending).count = 256;
  job.Send(2, world, 1, 1.0, Done::kPending).count = 512;
  job.Recv(1, world, 2, 1.0, Done::kPending).count = 256;
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeWith(job, 6, ConfirmAtOnce());
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  for (const Verdict& v : a.verdicts) {
    if (v.cls != VerdictClass::kDesync) continue;
    EXPECT_TRUE(v.tie) << v.summary;
    EXPECT_EQ(v.culprits.size(), 2u) << v.summary;
  }
  EXPECT_EQ(First(a).cls, VerdictClass::kDesync);
}

// Eight ranks that completed 40 allreduces on world; the rings of some wrapped.
JobBuilder Long8(uint64_t* world) {
  JobBuilder job(8);
  *world = job.Comm("world", {0, 1, 2, 3, 4, 5, 6, 7});
  for (int i = 0; i < 40; ++i) {
    for (int r = 0; r < 8; ++r) job.Coll(r, *world, OpType::kAllReduce, 0.01 * i, Done::kCompleted);
  }
  return job;
}

TEST(Wrapped, ADesyncAfterEveryRingWrappedDifferentlyNamesTheOddRank) {
  uint64_t world;
  JobBuilder job = Long8(&world);
  for (int r = 0; r < 8; ++r) {
    job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending, r == 5 ? 1024 : 256);
  }
  for (int r = 0; r < 8; ++r) job.Wrap(r, 3 + r);  // rank 0 keeps 3 records, rank 7 keeps 10
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeAt(job, 6);
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDesync);
  EXPECT_EQ(v.seq, 41u);
  EXPECT_EQ(v.culprits, std::vector<int>{5});
  EXPECT_EQ(v.victims, (std::vector<int>{0, 1, 2, 3, 4, 6, 7}));
  ExpectSummariesAgree(a);
}

TEST(Wrapped, ADesyncAndASilentRankAfterTheRingsWrapped) {
  uint64_t world;
  JobBuilder job = Long8(&world);
  for (int r = 0; r < 7; ++r) {
    job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending, r == 2 ? 1024 : 256);
  }
  for (int r = 0; r < 8; ++r) job.Wrap(r, 5);
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeWith(job, 6, ConfirmAtOnce());
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  ASSERT_EQ(a.verdicts.size(), 2u);
  EXPECT_EQ(a.verdicts[0].cls, VerdictClass::kDesync);
  EXPECT_EQ(a.verdicts[0].culprits, std::vector<int>{2});
  EXPECT_EQ(a.verdicts[1].cls, VerdictClass::kMissing);
  EXPECT_EQ(a.verdicts[1].culprits, std::vector<int>{7});
  ExpectSummariesAgree(a);
}

TEST(Wrapped, AReceiveWhoseSenderWrappedPastThePairBlamesTheSender) {
  // Rank 0 sent to rank 1 once, long ago, then filled its ring with tp work; it never sends the
  // second message. Its ring no longer shows the pair, which must not read as "rank 1 received
  // from a peer that never used this pair" (that blames rank 1, the one waiting).
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t tp = job.Comm("tp", {0, 2}, world, 1);
  job.Send(0, world, 1, 0.1, Done::kCompleted);
  job.Recv(1, world, 0, 0.1, Done::kCompleted);
  for (int i = 0; i < 20; ++i) {
    for (int r : {0, 2}) job.Coll(r, tp, OpType::kAllReduce, 0.2 + 0.01 * i, Done::kCompleted);
  }
  job.Recv(1, world, 0, 1.0, Done::kPending);
  job.Wrap(0, 10);
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeWith(job, 6, ConfirmAtOnce());
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kP2PDeadlock);
  EXPECT_EQ(v.culprits, std::vector<int>{0});
  EXPECT_EQ(v.victims, std::vector<int>{1});
  ExpectSummariesAgree(a);
}

TEST(Wrapped, AMissingRankWhoseRingWrappedPastEveryCollectiveOfTheCommunicator) {
  // Rank 3 did 20 tp collectives after world #2 and never issued world #3; its ring kept only
  // the tp ones, but it reaches back to before the others began to wait at world #3.
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t tp = job.Comm("tp", {2, 3}, world, 1);
  for (int r = 0; r < 4; ++r) {
    job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.Coll(r, world, OpType::kAllReduce, 0.2, Done::kCompleted);
  }
  for (int i = 0; i < 20; ++i) {
    for (int r : {2, 3}) job.Coll(r, tp, OpType::kAllReduce, 0.3 + 0.1 * i, Done::kCompleted);
  }
  for (int r = 0; r < 3; ++r) job.Coll(r, world, OpType::kAllReduce, 2.5, Done::kPending);
  job.Wrap(3, 15);  // its oldest record: tp #6 at 0.8 s
  job.HeartbeatAll(8);
  const Analysis a = AnalyzeWith(job, 8, ConfirmAtOnce());
  SCOPED_TRACE(hang_detector::RenderText(a, false));
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_EQ(v.comm_id, world);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_EQ(v.victims, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(Mentions(v, 3));
  ExpectSummariesAgree(a);
}

}  // namespace
}  // namespace ncclscope::testing
