// Where a device stall is stuck, from the profiler's proxy_progress records over synthetic rings of
// a 4-rank ring allreduce (rank r sends to r+1 and receives from r-1 on channel 0), with the step
// states NCCL 2.28.9 records in src/transport/net.cc (sendProxyProgress, recvProxyProgress): every
// member's kernel started, so without these records the stall is a tie.
#include <gtest/gtest.h>

#include "hang_detector/ingest/rank_digest.h"
#include "hang_detector/verdicts/verdict_json.h"
#include "hang_detector/verdicts/verdict_text.h"
#include "tests/hang_detector/analyze_helpers.h"

namespace ncclscope::testing {
namespace {

constexpr int kSendGpuWait = 8, kSendWait = 9, kRecvWait = 10, kRecvGpuWait = 12,
              kSendPeerWait = 20;

// #1 completed everywhere; #2 issued and started by every rank, completed by none.
JobBuilder AllStarted(uint64_t* world) {
  JobBuilder job(4);
  *world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    job.ProfilerAttach(r, *world, 0.05);
    job.Coll(r, *world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.DeviceStart(r, *world, 1, 0.1);
    job.Coll(r, *world, OpType::kAllReduce, 1.0, Done::kPending);
    job.DeviceStart(r, *world, 2, 1.0);
  }
  job.HeartbeatAll(5);
  return job;
}

TEST(StallStage, WithoutProxyRecordsEveryStartedRankIsATie) {
  uint64_t world;
  const Analysis a = AnalyzeAt(AllStarted(&world), 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStall);
  EXPECT_TRUE(v.tie);
  EXPECT_TRUE(v.stall.stage.empty());
}

TEST(StallStage, SendHandedToTheNetworkAndReceiveWaitingNamesTheLink) {
  uint64_t world;
  JobBuilder job = AllStarted(&world);
  // 1 -> 2 lost on the wire; the others wait on their neighbours.
  job.ProxyProgress(1, world, 2, 2, 0, true, kSendWait, 1.5);
  job.ProxyProgress(2, world, 2, 1, 0, false, kRecvWait, 1.5);
  job.ProxyProgress(2, world, 2, 3, 0, true, kSendGpuWait, 1.5);
  job.ProxyProgress(3, world, 2, 2, 0, false, kRecvWait, 1.5);
  job.ProxyProgress(0, world, 2, 3, 0, false, kRecvWait, 1.5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStall);
  EXPECT_FALSE(v.tie);
  EXPECT_EQ(v.culprits, (std::vector<int>{1, 2}));
  EXPECT_EQ(v.victims, (std::vector<int>{0, 3}));
  EXPECT_EQ(v.stall.stage, "network");
  EXPECT_EQ(v.stall.rank, 1);
  EXPECT_EQ(v.stall.peer, 2);
  EXPECT_EQ(v.stall.channel, 0);
  EXPECT_EQ(v.stall.side, "send");
  const std::string text = hang_detector::RenderText(a, false);
  EXPECT_NE(text.find("[stage network: rank 1 send peer 2 channel 0]"), std::string::npos) << text;
  const std::string json = hang_detector::RenderJson(a, 0);
  EXPECT_NE(json.find("\"stall\":{\"stage\":\"network\",\"rank\":1,\"peer\":2,\"channel\":0,"
                      "\"side\":\"send\"}"),
            std::string::npos)
      << json;
}

TEST(StallStage, SenderWhoseGpuProducesNothingIsTheCulprit) {
  uint64_t world;
  JobBuilder job = AllStarted(&world);
  // 3's GPU never filled its send buffer, though 3 waits for no data itself.
  job.ProxyProgress(3, world, 2, 0, 0, true, kSendGpuWait, 1.5);
  job.ProxyProgress(0, world, 2, 3, 0, false, kRecvWait, 1.5);
  job.ProxyProgress(0, world, 2, 1, 0, true, kSendGpuWait, 1.5);
  job.ProxyProgress(1, world, 2, 0, 0, false, kRecvWait, 1.5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_FALSE(v.tie);
  EXPECT_EQ(v.culprits, std::vector<int>{3});
  EXPECT_EQ(v.stall.stage, "gpu");
  EXPECT_EQ(v.stall.rank, 3);
  EXPECT_EQ(v.stall.peer, 0);
}

TEST(StallStage, SendWithoutCreditBlamesTheReceiverThatDoesNotConsume) {
  uint64_t world;
  JobBuilder job = AllStarted(&world);
  job.ProxyProgress(0, world, 2, 1, 0, true, kSendPeerWait, 1.5);
  job.ProxyProgress(1, world, 2, 0, 0, false, kRecvGpuWait, 1.5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_FALSE(v.tie);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
  EXPECT_EQ(v.stall.stage, "peer-wait");
  EXPECT_EQ(v.stall.rank, 0);
  EXPECT_EQ(v.stall.side, "send");
  EXPECT_EQ(v.stall.peer, 1);
}

TEST(StallStage, ReceiveWhoseSenderNeverStartedSendingBlamesTheSender) {
  uint64_t world;
  JobBuilder job = AllStarted(&world);
  job.ProxyProgress(2, world, 2, 1, 3, false, kRecvWait, 1.5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_FALSE(v.tie);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
  EXPECT_EQ(v.stall.stage, "peer-wait");
  EXPECT_EQ(v.stall.side, "recv");
  EXPECT_EQ(v.stall.channel, 3);
}

TEST(StallStage, TheNewestProgressOfEachSideCounts) {
  uint64_t world;
  JobBuilder job = AllStarted(&world);
  job.ProxyProgress(1, world, 2, 2, 0, true, kSendWait, 1.5);
  job.ProxyProgress(2, world, 2, 1, 0, false, kRecvWait, 1.5);
  job.ProxyProgress(2, world, 2, 1, 0, false, kRecvWait, 1.6);
  const Analysis a = AnalyzeAt(job, 5);
  EXPECT_EQ(First(a).stall.stage, "network");
}

// A rank whose NCCL proxy thread stopped reports no start of #2, but neither did it report #1's,
// which completed on its device: that is not "its kernel never started".
TEST(StallStage, SilentProxyThreadIsNeverReadAsAKernelThatNeverStarted) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    job.ProfilerAttach(r, world, 0.05);
    job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
    if (r != 1) job.DeviceStart(r, world, 1, 0.1);
    job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending);
    if (r != 1) job.DeviceStart(r, world, 2, 1.0);
  }
  job.HeartbeatAll(5);  // rank 1 lives: its heartbeat goes on
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStall);
  EXPECT_TRUE(v.tie);
  EXPECT_EQ(v.stall.stage, "proxy-stalled");
  EXPECT_EQ(v.stall.rank, 1);
  EXPECT_EQ(v.summary.find("never started"), std::string::npos) << v.summary;
}

// The start of #1 written before #1's own record (its kernel started before NCCL returned) is
// still a start: rank 1's proxy reports, so its missing start of #2 means never started.
TEST(StallStage, AStartWrittenBeforeItsRecordIsNoProxySilence) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) {
    job.ProfilerAttach(r, world, 0.05);
    job.DeviceStart(r, world, 1, 0.1);
    job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending);
  }
  job.DeviceStart(0, world, 2, 1.0);
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.stall.stage, "not-started");
  EXPECT_EQ(v.culprits, std::vector<int>{1});
}

}  // namespace
}  // namespace ncclscope::testing

namespace ncclscope::testing {
namespace {

// A pipeline pair on a 2-rank communicator: send #1 of 0 to 1 completed, send #2 and its receive
// issued by both and completed by neither, each alone on its stream.
JobBuilder PipelinePair(uint64_t* pp) {
  JobBuilder job(2);
  *pp = job.Comm("pp", {0, 1});
  for (int r = 0; r < 2; ++r) job.ProfilerAttach(r, *pp, 0.05);
  job.Send(0, *pp, 1, 0.1, Done::kCompleted);
  job.Recv(1, *pp, 0, 0.1, Done::kCompleted);
  job.P2pDeviceStart(0, *pp, 1, 1, true, 0.1);
  job.P2pDeviceStart(1, *pp, 1, 0, false, 0.1);
  job.Send(0, *pp, 1, 1.0, Done::kPending);
  job.Recv(1, *pp, 0, 1.0, Done::kPending);
  job.HeartbeatAll(5);
  return job;
}

TEST(P2pStall, WithoutMarkersAWaitingPairIsNotReportedAsADeviceStall) {
  uint64_t pp;
  JobBuilder job(2);
  pp = job.Comm("pp", {0, 1});
  job.Send(0, pp, 1, 1.0, Done::kPending);
  job.Recv(1, pp, 0, 1.0, Done::kPending);
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  for (const Verdict& v : a.verdicts) EXPECT_NE(v.cls, VerdictClass::kDeviceStall);
}

TEST(P2pStall, ReceiveWhoseDeviceWorkNeverStartedIsTheCulprit) {
  uint64_t pp;
  JobBuilder job = PipelinePair(&pp);
  job.P2pDeviceStart(0, pp, 2, 1, true, 1.0);  // the send started; the receive never did
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStall);
  EXPECT_EQ(v.op, "send");
  EXPECT_EQ(v.seq, 2u);
  EXPECT_FALSE(v.tie);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
  EXPECT_EQ(v.victims, std::vector<int>{0});
  EXPECT_EQ(v.stall.stage, "not-started");
  EXPECT_EQ(v.stall.side, "recv");
}

TEST(P2pStall, BothStartedAndTheLinkLostTheDataNamesTheLink) {
  uint64_t pp;
  JobBuilder job = PipelinePair(&pp);
  job.P2pDeviceStart(0, pp, 2, 1, true, 1.0);
  job.P2pDeviceStart(1, pp, 2, 0, false, 1.0);
  job.ProxyProgress(0, pp, 2, 1, 1, true, kSendWait, 1.5, OpType::kSend);
  job.ProxyProgress(1, pp, 2, 0, 1, false, kRecvWait, 1.5, OpType::kRecv);
  // A collective #2 record of the same communicator is not this pair's.
  job.ProxyProgress(1, pp, 2, 0, 1, false, kRecvGpuWait, 1.6);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStall);
  EXPECT_EQ(v.stall.stage, "network");
  EXPECT_EQ(v.stall.rank, 0);
  EXPECT_EQ(v.stall.peer, 1);
  EXPECT_EQ(v.stall.channel, 1);
  EXPECT_EQ(v.culprits, (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace ncclscope::testing

namespace ncclscope::testing {
namespace {

// A node's digest keeps what names the stage: the proxy progress and send/recv starts, even when
// many newer records follow them.
TEST(StallStageDigest, ProxyProgressAndP2pStartsSurviveTheDigestCut) {
  JobBuilder job(1);
  const uint64_t pp = job.Comm("pp", {0});
  const uint64_t other = job.Comm("other", {0});
  job.P2pDeviceStart(0, pp, 2, 1, true, 1.0);
  job.ProxyProgress(0, pp, 2, 1, 0, true, kSendWait, 1.5, OpType::kSend);
  for (int i = 0; i < 200; ++i)
    job.Coll(0, other, OpType::kAllReduce, 2 + 0.01 * i, Done::kCompleted);
  const hang_detector::RankFile whole = CompactFiles(job.Build()).front();
  const hang_detector::DigestCut cut = hang_detector::CutForDigest(whole, {});
  ASSERT_GT(cut.omitted, 100u);
  int proxy = 0, starts = 0;
  for (uint32_t p = 0; p < cut.file.size(); ++p) {
    const auto op = static_cast<OpType>(cut.file.ShapeAt(p).op);
    if (cut.file.ShapeAt(p).comm_id != pp) continue;
    proxy += op == OpType::kProxyProgress;
    starts += op == OpType::kP2pDeviceStart;
  }
  EXPECT_EQ(proxy, 1);
  EXPECT_EQ(starts, 1);
}

}  // namespace
}  // namespace ncclscope::testing
