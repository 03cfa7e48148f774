// Straggler verdicts by device time (hang_detector/device_compute.h) over synthetic training
// loops (step_model.h) with the device_compute records the CUPTI probe writes: world plus
// tensor-parallel pairs and two data-parallel groups, 8 ranks. The host side is one of the two
// patterns the host-time checks know (a rank arriving late, or transfers slow in the groups of
// one rank); the device side says whether that rank's GPU computed longer.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/hang_detector/analyze_helpers.h"
#include "tests/hang_detector/step_model.h"

namespace ncclscope::testing {
namespace {

using hang_detector::Evidence;

constexpr int kRanks = 8;
constexpr int kSteps = 20;
constexpr double kCompute = 0.020;

struct Job {
  Job() : job(kRanks), model(&job, kRanks, 3) {
    std::vector<int> all;
    for (int r = 0; r < kRanks; ++r) all.push_back(r);
    world = job.Comm("world", all);
    for (int g = 0; g < kRanks / 2; ++g) groups.push_back({2 * g, 2 * g + 1});
    for (int parity = 0; parity < 2; ++parity) {
      std::vector<int> dp;
      for (int r = parity; r < kRanks; r += 2) dp.push_back(r);
      groups.push_back(dp);
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      const bool tp = g < static_cast<size_t>(kRanks / 2);
      ids.push_back(job.Comm(tp ? "tp" : "dp", groups[g], world, tp ? 0 : 1));
    }
    model.compute_s = kCompute;
  }
  void Run() {
    for (int s = 0; s < kSteps; ++s) {
      std::vector<ModelOp> ops;
      std::vector<std::vector<int>> members;
      for (size_t g = 0; g < groups.size(); ++g) {
        ops.push_back({ids[g], OpType::kAllReduce, 0.005});
        members.push_back(groups[g]);
      }
      std::vector<int> all;
      for (int r = 0; r < kRanks; ++r) all.push_back(r);
      ops.push_back({world, OpType::kAllReduce, 0.01});
      members.push_back(all);
      model.Step(ops, members);
    }
  }
  // What the probe writes on `rank`: its GPU computed `compute_s(step)` before each step's first
  // collective (its tensor-parallel one) and nothing between the others. A negative value writes
  // the record with an unknown stretch (activity lost); `skip` writes none for that rank (CUPTI
  // off there, or its kernels never ended).
  template <typename F>
  void DeviceCompute(int rank, F compute_s) {
    const double t = model.Now();
    for (int s = 0; s < kSteps; ++s) {
      const int tp = rank / 2, dp = kRanks / 2 + rank % 2;
      Write(rank, ids[static_cast<size_t>(tp)], s + 1, compute_s(s), t);
      Write(rank, ids[static_cast<size_t>(dp)], s + 1, 0, t);
      Write(rank, world, s + 1, 0, t);
    }
  }
  // A device_compute record as the probe writes it (trace/record.h). The builder appends records
  // through its call helpers only, so a collective record is taken and rewritten; no collective
  // follows, so the sequence number it consumed is never used.
  void Write(int rank, uint64_t comm, uint64_t seq, double compute_s, double t) {
    trace::RecordData& r = job.Coll(rank, comm, OpType::kAllReduce, t, Done::kUntracked);
    r.op = static_cast<uint32_t>(OpType::kDeviceCompute);
    r.seq = seq;
    r.count = compute_s > 0 ? static_cast<uint64_t>(compute_s * 1e9) : 0;
    r.peer = compute_s > 0 ? 1 : 0;
    r.redop = static_cast<int32_t>(OpType::kAllReduce);
    r.dtype = 0;
    r.aux = 1;
    r.send_buffer = 2;
    r.recv_buffer = compute_s < 0 ? 0 : 1;
    r.flags = 0;
  }
  std::vector<Verdict> Stragglers() {
    job.HeartbeatAll(model.Now());
    std::vector<Verdict> out;
    for (const Verdict& v : AnalyzeAt(job, model.Now() + 0.01).verdicts) {
      if (v.cls == VerdictClass::kStraggler) out.push_back(v);
    }
    return out;
  }

  JobBuilder job;
  StepModel model;
  uint64_t world = 0;
  std::vector<std::vector<int>> groups;
  std::vector<uint64_t> ids;
};

bool Has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The host of a real GPU job runs ahead: a rank whose GPU computes twice as long issues its
// collectives on time, and they start late on its device, so every group it is in takes longer:
// to host times that is a slow link. Device time names it a compute straggler.
TEST(DeviceCompute, SlowLinkWhoseGpuComputesLongerIsAComputeStraggler) {
  Job j;
  j.model.link_slow = {{2, 3.0, 4}};
  j.Run();
  for (int r = 0; r < kRanks; ++r) {
    j.DeviceCompute(r, [&](int s) { return r == 2 && s >= 4 ? 2 * kCompute : kCompute; });
  }
  const std::vector<Verdict> v = j.Stragglers();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].culprits, std::vector<int>{2});
  EXPECT_FALSE(v[0].tie);
  EXPECT_TRUE(Has(v[0].summary,
                  "compute straggler (device time): rank 2's GPU computes 20.0 ms "
                  "longer before each tp collective"))
      << v[0].summary;
  EXPECT_FALSE(Has(v[0].summary, "slow link")) << v[0].summary;
  EXPECT_TRUE(std::any_of(v[0].evidence.begin(), v[0].evidence.end(), [](const Evidence& e) {
    return e.rank == 2 && Has(e.text,
                              "GPU computes 40.0 ms before each tp collective, the "
                              "others 20.0 ms");
  }));
}

TEST(DeviceCompute, SlowLinkWhoseGpuComputesLikeTheOthersStaysALink) {
  Job j;
  j.model.link_slow = {{2, 3.0, 4}};
  j.Run();
  for (int r = 0; r < kRanks; ++r) j.DeviceCompute(r, [](int) { return kCompute; });
  const std::vector<Verdict> v = j.Stragglers();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].culprits, std::vector<int>{2});
  EXPECT_TRUE(Has(v[0].summary, "slow link: transfers of rank 2")) << v[0].summary;
  EXPECT_TRUE(Has(v[0].summary,
                  "GPU compute is ordinary (device time): the time is in the "
                  "transfers"))
      << v[0].summary;
}

TEST(DeviceCompute, LateRankWhoseGpuComputesLongerIsConfirmed) {
  Job j;
  j.model.compute_slow = {{5, 2.0, 4}};
  j.Run();
  for (int r = 0; r < kRanks; ++r) {
    j.DeviceCompute(r, [&](int s) { return r == 5 && s >= 4 ? 2 * kCompute : kCompute; });
  }
  const std::vector<Verdict> v = j.Stragglers();
  ASSERT_FALSE(v.empty());
  for (const Verdict& x : v) {
    EXPECT_EQ(x.culprits, std::vector<int>{5});
    EXPECT_TRUE(Has(x.summary, "compute straggler: rank 5 arrives")) << x.summary;
    EXPECT_TRUE(Has(x.summary, "its GPU computes 20.0 ms longer (device time)")) << x.summary;
  }
}

// Late on the host with an ordinary GPU: the time goes outside its kernels (data loading, the
// CPU, Python), which is what the operator needs to look at instead of the GPU.
TEST(DeviceCompute, LateRankWhoseGpuComputesLikeTheOthersIsLateOnTheHost) {
  Job j;
  j.model.compute_slow = {{5, 2.0, 4}};
  j.Run();
  for (int r = 0; r < kRanks; ++r) j.DeviceCompute(r, [](int) { return kCompute; });
  const std::vector<Verdict> v = j.Stragglers();
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].culprits, std::vector<int>{5});
  EXPECT_TRUE(Has(v[0].summary,
                  "its GPU compute is ordinary (device time): the delay is on the "
                  "host, outside its GPU kernels"))
      << v[0].summary;
}

// A rank without device_compute records (CUPTI off there, or its kernels never ended: a hung
// kernel has no activity record) or with unknown stretches is not read as computing nothing.
TEST(DeviceCompute, MissingOrUnknownDeviceRecordsLeaveTheHostVerdict) {
  for (const bool unknown : {false, true}) {
    SCOPED_TRACE(unknown ? "unknown stretches" : "no records");
    Job j;
    j.model.link_slow = {{2, 3.0, 4}};
    j.Run();
    for (int r = 0; r < kRanks; ++r) {
      if (r == 2 && !unknown) continue;
      j.DeviceCompute(r, [&](int) { return r == 2 ? -1.0 : kCompute; });
    }
    const std::vector<Verdict> v = j.Stragglers();
    ASSERT_EQ(v.size(), 1u);
    EXPECT_TRUE(Has(v[0].summary, "slow link: transfers of rank 2")) << v[0].summary;
    EXPECT_FALSE(Has(v[0].summary, "device time")) << v[0].summary;
  }
}

}  // namespace
}  // namespace ncclscope::testing
