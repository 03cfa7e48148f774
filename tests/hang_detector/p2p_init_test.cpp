// Send/recv without counterpart, send/recv wait-for cycles, and ranks that never joined a
// communicator's creation.
#include <gtest/gtest.h>

#include "tests/hang_detector/analyze_helpers.h"
#include "trace/identity.h"

namespace ncclscope::testing {
namespace {

TEST(P2P, ReceiveWhoseSendNeverCameBlamesTheSender) {
  JobBuilder job(2);
  const uint64_t pp = job.Comm("pp", {0, 1});
  job.Send(0, pp, 1, 0.5, Done::kCompleted);
  job.Recv(1, pp, 0, 0.5, Done::kCompleted);
  job.Recv(1, pp, 0, 1.0, Done::kPending);  // rank 0 never sends the second one
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kP2PDeadlock);
  EXPECT_EQ(v.comm_name, "pp");
  EXPECT_EQ(v.op, "recv");
  EXPECT_EQ(v.seq, 2u);
  EXPECT_EQ(v.culprits, std::vector<int>{0});
  EXPECT_EQ(v.victims, std::vector<int>{1});
}

TEST(P2P, SendToAPeerThatNeverReceivesFromUsBlamesTheSender) {
  JobBuilder job(3);
  const uint64_t pp = job.Comm("pp", {0, 1, 2});
  job.Send(0, pp, 1, 0.5, Done::kCompleted);
  job.Recv(1, pp, 0, 0.5, Done::kCompleted);
  job.Send(0, pp, 2, 1.0, Done::kPending);  // wrong peer
  job.Recv(1, pp, 0, 1.0, Done::kPending);
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kP2PDeadlock);
  EXPECT_EQ(v.culprits, std::vector<int>{0});
  EXPECT_EQ(v.op, "recv");  // the victim's wait comes first
}

TEST(P2P, EveryStageSendingFirstIsACycle) {
  JobBuilder job(3);
  const uint64_t ring = job.Comm("ring", {0, 1, 2});
  for (int r = 0; r < 3; ++r) {
    job.Send(r, ring, (r + 1) % 3, 1.0, Done::kPending);
    job.Recv(r, ring, (r + 2) % 3, 1.0, Done::kPending);
  }
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kP2PDeadlock);
  EXPECT_TRUE(v.tie);
  EXPECT_EQ(v.culprits, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(v.comm_name, "ring");
}

TEST(P2P, GroupedSendAndReceiveAreNoCycle) {
  JobBuilder job(2);
  const uint64_t pp = job.Comm("pp", {0, 1});
  for (int r = 0; r < 2; ++r) {
    job.Send(r, pp, 1 - r, 1.0, Done::kCompleted).group_id = 7;
    job.Recv(r, pp, 1 - r, 1.0, Done::kCompleted).group_id = 7;
  }
  job.HeartbeatAll(5);
  EXPECT_EQ(First(AnalyzeAt(job, 5)).cls, VerdictClass::kHealthy);
}

TEST(InitHang, RanksThatNeverCalledTheSplitAreTheCulprits) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  for (int r : {0, 3}) job.SplitInCall(r, world, 2, r % 2, 0.5);
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kInitHang);
  EXPECT_EQ(v.comm_name, "world");
  EXPECT_EQ(v.op, "comm_split");
  EXPECT_EQ(v.seq, 2u);
  EXPECT_EQ(v.culprits, (std::vector<int>{1, 2}));
  EXPECT_EQ(v.victims, (std::vector<int>{0, 3}));
}

TEST(InitHang, RankThatNeverJoinedWorldIsTheCulpritWhenItsFileShowsIt) {
  JobBuilder job(4);
  const uint64_t world = trace::CommIdFromUniqueId("uid", 3);
  for (int r = 0; r < 3; ++r) job.InitInCall(r, world, 4, r, 0.2);
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kInitHang);
  EXPECT_EQ(v.comm_id, world);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_EQ(v.victims, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(v.unseen.empty());
}

// Without rank 3's file nothing shows it did not call: its file may be on another node. The
// verdict names who waits and who is not seen, and blames nobody.
TEST(InitHang, RankWithoutAFileIsUnseenNotTheCulprit) {
  JobBuilder job(4);
  const uint64_t world = trace::CommIdFromUniqueId("uid", 3);
  for (int r = 0; r < 3; ++r) job.InitInCall(r, world, 4, r, 0.2);
  job.RemoveFile(3);
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kInitHang);
  EXPECT_EQ(v.comm_id, world);
  EXPECT_TRUE(v.culprits.empty());
  EXPECT_FALSE(v.tie);
  EXPECT_EQ(v.unseen, std::vector<int>{3});
  EXPECT_EQ(v.victims, (std::vector<int>{0, 1, 2}));
  EXPECT_NE(v.summary.find("rank 3 (no ring file or digest here) should join it"),
            std::string::npos)
      << v.summary;
}

TEST(InitHang, EveryoneInsideTheCallIsATie) {
  JobBuilder job(2);
  const uint64_t world = trace::CommIdFromUniqueId("uid", 3);
  for (int r = 0; r < 2; ++r) job.InitInCall(r, world, 2, r, 0.2);
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kInitHang);
  EXPECT_TRUE(v.tie);
}

}  // namespace
}  // namespace ncclscope::testing
