// NCCLSCOPE_NUMERICS's side of the probe in front of a fake driver that runs each launch at once
// through the CPU twin (so results are real) and fires events only when the test says so: which
// collectives are sampled, what is launched before and after NCCL's call and in which order, and
// which records reach the ring.
#include "plugin/numerics/numerics_probe.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "../trace/temp_dir.h"
#include "collectives/numerics/numerics_twin.h"
#include "tests/plugin/fake_numerics_driver.h"
#include "trace/ring_reader.h"

namespace ncclscope::plugin {
namespace {

namespace nc = collectives;
using trace::OpType;

using testing::FakeNumericsDriver;
using testing::LoadFakeNumericsDriver;
const char* const kHashName = nc::kContentHashKernelName;

bool LoadFails(const std::string&, cuda::Driver*, std::string* error) {
  *error = "no driver here";
  return false;
}

NumericsSettings Settings(const std::string& mode, int64_t every, const std::string& ops = "",
                          const std::string& comms = "") {
  std::vector<std::string> warnings;
  NumericsSettings s = ParseNumericsSettings(mode, every, ops, comms, &warnings);
  EXPECT_TRUE(warnings.empty());
  return s;
}

class NumericsProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::g_fake_numerics = &state_;
    trace::RingOptions options;
    options.dir = dir_.path();
    options.record_capacity = 256;
    std::string error;
    ring_ = trace::RingWriter::Create(options, &error);
    ASSERT_NE(ring_, nullptr) << error;
    comm_.id = 0xC0FFEE;
    comm_.name = "dp";
    comm_.SetRanks(1, 4);
  }
  void TearDown() override { testing::g_fake_numerics = nullptr; }

  std::vector<trace::NumericsSample> Samples(uint64_t* skipped = nullptr) {
    std::string error;
    auto snap = trace::ReadRingFile(ring_->path(), &error);
    EXPECT_TRUE(snap.has_value()) << error;
    std::vector<trace::NumericsSample> out;
    for (const auto& r : snap->records) {
      if (r.data.op == static_cast<uint32_t>(OpType::kNumerics)) {
        out.push_back(trace::DecodeNumerics(r.data));
      }
    }
    if (skipped != nullptr) *skipped = snap->numerics_skipped;
    return out;
  }

  NumericsCall AllReduceOf(std::vector<float>& send, std::vector<float>& recv) {
    NumericsCall c;
    c.op = OpType::kAllReduce;
    c.send = send.data();
    c.recv = recv.data();
    c.count = send.size();
    c.dtype = 7;  // ncclFloat32
    c.rank = 1;
    c.nranks = 4;
    c.comm_id = comm_.id;
    c.stream = reinterpret_cast<cudaStream_t>(0x5);
    return c;
  }

  FakeNumericsDriver state_;
  ncclscope::testing::TempDir dir_;
  std::unique_ptr<trace::RingWriter> ring_;
  CommState comm_;
  ThreadState ts_{};
};

TEST(NumericsSettingsTest, ModesListsAndUnknownNames) {
  std::vector<std::string> warnings;
  NumericsSettings s =
      ParseNumericsSettings("nan", 5, "allreduce, allgather,bogus", "dp,0x1f", &warnings);
  EXPECT_TRUE(s.scan);
  EXPECT_FALSE(s.hash);
  EXPECT_EQ(s.every, 5u);
  EXPECT_TRUE(s.SamplesOp(OpType::kAllReduce));
  EXPECT_TRUE(s.SamplesOp(OpType::kAllGather));
  EXPECT_FALSE(s.SamplesOp(OpType::kBroadcast));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("'bogus'"), std::string::npos) << warnings[0];
  EXPECT_TRUE(s.SamplesComm("dp", 7));
  EXPECT_TRUE(s.SamplesComm("tp", 0x1f));
  EXPECT_TRUE(
      ParseNumericsSettings("all", 1, "", "000000000000001F", &warnings).SamplesComm("tp", 0x1f));
  EXPECT_FALSE(s.SamplesComm("tp", 0x20));
  EXPECT_FALSE(ParseNumericsSettings("off", 1, "", "", &warnings).enabled());
  const NumericsSettings all = ParseNumericsSettings("all", 1, "", "", &warnings);
  EXPECT_TRUE(all.scan && all.hash);
  EXPECT_TRUE(all.SamplesOp(OpType::kScatter));
  EXPECT_FALSE(all.SamplesOp(OpType::kSend));
  EXPECT_TRUE(all.SamplesComm("anything", 1));
}

TEST_F(NumericsProbeTest, SamplesEveryNthCallOfTheSampledOperationsOnly) {
  NumericsProbe probe(ring_.get(), Settings("nan", 3, "allreduce"), "", LoadFakeNumericsDriver);
  std::vector<int> sampled;
  for (int call = 1; call <= 7; ++call) {
    // Broadcasts in between are not counted: every rank counts the same allreduces.
    EXPECT_FALSE(probe.Sample(comm_, OpType::kBroadcast));
    if (probe.Sample(comm_, OpType::kAllReduce)) sampled.push_back(call);
  }
  EXPECT_EQ(sampled, (std::vector<int>{1, 4, 7}));
  CommState other;
  other.name = "tp";
  NumericsProbe only_dp(ring_.get(), Settings("nan", 1, "", "dp"), "", LoadFakeNumericsDriver);
  EXPECT_FALSE(only_dp.Sample(other, OpType::kAllReduce));
  EXPECT_FALSE(only_dp.Sample(other, OpType::kAllReduce));
}

TEST_F(NumericsProbeTest, ScanBeforeAndHashAfterReachTheRingOnceTheEventFired) {
  NumericsProbe probe(ring_.get(), Settings("all", 1), "", LoadFakeNumericsDriver);
  std::vector<float> send(100, 1.0f);
  std::vector<float> recv(100, 0.0f);
  send[37] = std::numeric_limits<float>::quiet_NaN();
  send[90] = std::numeric_limits<float>::infinity();
  const int32_t slot = probe.Before(AllReduceOf(send, recv));
  ASSERT_GE(slot, 0);
  EXPECT_EQ(state_.launches, (std::vector<std::string>{"ncclscope_numerics_scan_fp32"}));
  recv.assign(100, 4.0f);  // what NCCL wrote
  probe.After(slot, 12, /*in_group=*/false, ts_);
  EXPECT_EQ(state_.launches.back(), kHashName);
  probe.Poll(1000);
  EXPECT_TRUE(Samples().empty()) << "written before the passes finished";
  state_.events_done = true;
  probe.Poll(2000);
  const auto samples = Samples();
  ASSERT_EQ(samples.size(), 1u);
  const trace::NumericsSample& s = samples[0];
  EXPECT_EQ(s.comm_id, comm_.id);
  EXPECT_EQ(s.seq, 12u);
  EXPECT_EQ(s.op, OpType::kAllReduce);
  EXPECT_TRUE(s.scanned && s.hashed);
  EXPECT_EQ(s.nan_count, 1u);
  EXPECT_EQ(s.inf_count, 1u);
  EXPECT_EQ(s.first_nonfinite, 37u);
  EXPECT_EQ(s.hash, nc::ContentHashTwin(recv.data(), recv.size() * sizeof(float)));
  EXPECT_EQ(s.hash_bytes, 400u);
  EXPECT_EQ(s.hash_version, nc::kContentHashVersion);
}

TEST_F(NumericsProbeTest, InsideAGroupTheHashWaitsForTheOutermostGroupEnd) {
  NumericsProbe probe(ring_.get(), Settings("checksum", 1), "", LoadFakeNumericsDriver);
  std::vector<float> send(8, 1.0f);
  std::vector<float> recv(8, 0.0f);
  const int32_t slot = probe.Before(AllReduceOf(send, recv));
  ASSERT_GE(slot, 0);
  EXPECT_TRUE(state_.launches.empty()) << "checksum mode scans nothing";
  probe.After(slot, 3, /*in_group=*/true, ts_);
  EXPECT_TRUE(state_.launches.empty()) << "hashed before NCCL ran the group's work";
  EXPECT_EQ(ts_.numerics_deferred_count, 1u);
  recv.assign(8, 4.0f);
  probe.AtOutermostGroupEnd(ts_, /*launched=*/true);
  EXPECT_EQ(state_.launches, (std::vector<std::string>{kHashName}));
  state_.events_done = true;
  probe.Poll(1);
  const auto samples = Samples();
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_FALSE(samples[0].scanned);
  EXPECT_EQ(samples[0].hash, nc::ContentHashTwin(recv.data(), recv.size() * sizeof(float)));
}

TEST_F(NumericsProbeTest, RejectedCallsAndUnlaunchedGroupsWriteNothing) {
  NumericsProbe probe(ring_.get(), Settings("all", 1), "", LoadFakeNumericsDriver);
  std::vector<float> send(8, 1.0f);
  std::vector<float> recv(8, 0.0f);
  probe.After(probe.Before(AllReduceOf(send, recv)), /*seq=*/0, false, ts_);
  probe.After(probe.Before(AllReduceOf(send, recv)), 5, /*in_group=*/true, ts_);
  probe.AtOutermostGroupEnd(ts_, /*launched=*/false);
  state_.events_done = true;
  probe.Poll(1);
  EXPECT_TRUE(Samples().empty());
  // Both slots came back: the pool is not leaked.
  for (int i = 0; i < 600; ++i) {
    const int32_t slot = probe.Before(AllReduceOf(send, recv));
    ASSERT_GE(slot, 0) << i;
    probe.After(slot, static_cast<uint64_t>(i) + 1, false, ts_);
    probe.Poll(i);
  }
}

TEST_F(NumericsProbeTest, CapturedStreamsAndAMissingDriverAreCountedAsSkipped) {
  NumericsProbe probe(ring_.get(), Settings("all", 1), "", LoadFakeNumericsDriver);
  std::vector<float> send(8, 1.0f);
  std::vector<float> recv(8, 0.0f);
  state_.capturing = true;
  EXPECT_EQ(probe.Before(AllReduceOf(send, recv)), -1);
  EXPECT_TRUE(state_.launches.empty());
  NumericsProbe no_driver(ring_.get(), Settings("all", 1), "", LoadFails);
  EXPECT_EQ(no_driver.Before(AllReduceOf(send, recv)), -1);
  EXPECT_EQ(no_driver.Before(AllReduceOf(send, recv)), -1);
  uint64_t skipped = 0;
  EXPECT_TRUE(Samples(&skipped).empty());
  EXPECT_EQ(skipped, 3u);
}

TEST_F(NumericsProbeTest, IntegerBuffersAreNotScannedAndBroadcastScansTheRootOnly) {
  NumericsProbe probe(ring_.get(), Settings("nan", 1), "", LoadFakeNumericsDriver);
  std::vector<float> send(8, 1.0f);
  std::vector<float> recv(8, 0.0f);
  NumericsCall ints = AllReduceOf(send, recv);
  ints.dtype = 2;  // ncclInt32
  probe.After(probe.Before(ints), 1, false, ts_);
  NumericsCall bcast = AllReduceOf(send, recv);
  bcast.op = OpType::kBroadcast;
  bcast.root = 0;  // this rank is 1
  probe.After(probe.Before(bcast), 2, false, ts_);
  EXPECT_TRUE(state_.launches.empty());
  EXPECT_EQ(state_.events_recorded, 0) << "a call with nothing to check costs no event";
  bcast.root = 1;
  probe.After(probe.Before(bcast), 3, false, ts_);
  EXPECT_EQ(state_.launches.size(), 1u);
  state_.events_done = true;
  probe.Poll(1);
  const auto samples = Samples();
  ASSERT_EQ(samples.size(), 1u) << "calls with nothing scanned leave no record";
  EXPECT_EQ(samples[0].seq, 3u);
}

}  // namespace
}  // namespace ncclscope::plugin
