// What the correlator leads with when one fault stalls many operations: the echoes of a stuck rank
// (work queued behind its victims' waits, its pipeline neighbours' waits) do not become verdicts
// of their own.
#include <gtest/gtest.h>

#include "tests/hang_detector/analyze_helpers.h"

namespace ncclscope::testing {
namespace {

TEST(VerdictRanking, WorkQueuedBehindAWaitIsNotADeviceStall) {
  // Rank 1 never issues tp #2. Rank 0 waits in it and has already queued its pair #2 on the same
  // stream; rank 2 waits in pair #2 for rank 0's part, which cannot start.
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t tp = job.Comm("tp", {0, 1}, world, 1);
  const uint64_t pair = job.Comm("pair", {0, 2}, world, 2);
  for (int r : {0, 1}) job.Coll(r, tp, OpType::kAllReduce, 0.1, Done::kCompleted);
  for (int r : {0, 2}) job.Coll(r, pair, OpType::kAllReduce, 0.2, Done::kCompleted);
  const uint64_t stream = job.Coll(0, tp, OpType::kAllReduce, 1.0, Done::kPending).stream;
  job.Coll(0, pair, OpType::kAllReduce, 1.1, Done::kPending).stream = stream;
  job.Coll(2, pair, OpType::kAllReduce, 1.1, Done::kPending);
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeAt(job, 6);
  ASSERT_EQ(a.verdicts.size(), 1u) << First(a).summary;
  EXPECT_EQ(First(a).cls, VerdictClass::kMissing);
  EXPECT_EQ(First(a).comm_id, tp);
  EXPECT_EQ(First(a).culprits, std::vector<int>{1});
}

TEST(VerdictRanking, AStallAtTheHeadOfItsStreamStaysAVerdict) {
  // The same pair #2 stall without the queued-behind evidence: nothing explains it.
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t pair = job.Comm("pair", {0, 2}, world, 2);
  for (int r : {0, 2}) job.Coll(r, pair, OpType::kAllReduce, 0.2, Done::kCompleted);
  for (int r : {0, 2}) job.Coll(r, pair, OpType::kAllReduce, 1.1, Done::kPending);
  job.HeartbeatAll(6);
  const Analysis a = AnalyzeAt(job, 6);
  EXPECT_EQ(First(a).cls, VerdictClass::kDeviceStall);
  EXPECT_EQ(First(a).comm_id, pair);
}

TEST(VerdictRanking, ALaterP2PWaitOnTheSameCulpritJoinsTheEarlierMissing) {
  // Rank 1 stops before tp #2 (at t = 1.0 its peer waits); its pipeline neighbour rank 2 then
  // waits for a receive rank 1 never posts (t = 1.5). One fault, one verdict: the earlier wait.
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t tp = job.Comm("tp", {0, 1}, world, 1);
  for (int r : {0, 1}) job.Coll(r, tp, OpType::kAllReduce, 0.1, Done::kCompleted);
  job.Send(2, world, 1, 0.2, Done::kCompleted);
  job.Recv(1, world, 2, 0.2, Done::kCompleted);
  job.Coll(0, tp, OpType::kAllReduce, 1.0, Done::kPending);
  job.Send(2, world, 1, 1.5, Done::kPending);
  job.HeartbeatAll(8);
  const Analysis a = AnalyzeAt(job, 8);
  ASSERT_EQ(a.verdicts.size(), 1u) << First(a).summary;
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_EQ(v.comm_id, tp);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
  EXPECT_EQ(v.victims, (std::vector<int>{0, 2}));
  const bool also_p2p = std::any_of(v.evidence.begin(), v.evidence.end(), [](const auto& e) {
    return e.text.find("also: p2p-deadlock") != std::string::npos;
  });
  EXPECT_TRUE(also_p2p);
}

TEST(VerdictRanking, TheHeadlineIsTheCulpritsFirstMissedCollectiveInProgramOrder) {
  // Every step is tp allreduce, then dp reduce-scatter. Rank 3 stops before tp #2. Its dp peers
  // reach dp #2 and wait there before its tp peer (slow this step) reaches tp #2, and they are
  // more: by time and number dp #2 would lead, but every rank's program has tp #2 first.
  JobBuilder job(8);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3, 4, 5, 6, 7});
  std::vector<uint64_t> tp, dp;
  for (int g = 0; g < 4; ++g) tp.push_back(job.Comm("tp", {2 * g, 2 * g + 1}, world, 1));
  for (int g = 0; g < 2; ++g) dp.push_back(job.Comm("dp", {g, g + 2, g + 4, g + 6}, world, 2));
  for (int r = 0; r < 8; ++r) {
    job.Coll(r, tp[r / 2], OpType::kAllReduce, 0.1, Done::kCompleted);
    job.Coll(r, dp[r % 2], OpType::kReduceScatter, 0.2, Done::kCompleted);
  }
  for (int r : {0, 1, 4, 5, 6, 7})
    job.Coll(r, tp[r / 2], OpType::kAllReduce, 1.0, Done::kCompleted);
  for (int r : {0, 1, 4, 5, 6, 7}) {
    job.Coll(r, dp[r % 2], OpType::kReduceScatter, 1.05, Done::kPending);
  }
  job.Coll(2, tp[1], OpType::kAllReduce, 1.2, Done::kPending);
  job.HeartbeatAll(8);
  const Analysis a = AnalyzeAt(job, 8);
  ASSERT_EQ(a.verdicts.size(), 1u) << First(a).summary;
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kMissing);
  EXPECT_EQ(v.comm_id, tp[1]) << v.comm_name << " #" << v.seq;
  EXPECT_EQ(v.seq, 2u);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_EQ(v.victims, (std::vector<int>{1, 2, 5, 7}));
}

}  // namespace
}  // namespace ncclscope::testing
