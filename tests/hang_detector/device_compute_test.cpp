// Straggler verdicts by device time (hang_detector/detectors/device_compute.h) over synthetic
// training loops with the device_compute records the CUPTI probe writes (device_compute_job.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "hang_detector/ingest/rank_digest.h"
#include "tests/hang_detector/device_compute_job.h"

namespace ncclscope::testing {
namespace {

using hang_detector::Evidence;

using device_compute_job::Job;
using device_compute_job::kCompute;
using device_compute_job::kRanks;

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

// A node's digest keeps the device_compute records of the collectives it keeps (whatever the
// newest-records rule leaves out), so another node's view tells the compute straggler from a slow
// link as this node's does.
TEST(DeviceCompute, DigestCutKeepsTheDeviceTimeOfTheCollectivesItKeeps) {
  Job j;
  j.model.link_slow = {{2, 3.0, 4}};
  j.Run([&](int s) {
    for (int r = 0; r < kRanks; ++r) {
      j.DeviceComputeOfStep(r, s, r == 2 && s >= 4 ? 2 * kCompute : kCompute);
    }
  });
  const std::vector<hang_detector::RankFile> files = j.Files();
  hang_detector::DigestLimits limits;
  limits.per_comm = 12;  // of 20 steps: the device records of the 8 oldest go
  limits.newest = 4;
  std::vector<hang_detector::RankFile> cuts;
  for (const hang_detector::RankFile& f : files) {
    hang_detector::DigestCut cut = hang_detector::CutForDigest(f, limits);
    ASSERT_GT(cut.omitted, 0u);
    // Exactly the device records of the collectives kept (the newest 12 of each of the rank's
    // three communicators, and its oldest record): each collective of this job has one.
    std::set<std::pair<uint64_t, uint64_t>> kept;
    for (uint32_t p = 0; p < cut.file.size(); ++p) {
      if (cut.file.ShapeAt(p).op == static_cast<uint32_t>(OpType::kAllReduce)) {
        kept.insert({cut.file.ShapeAt(p).comm_id, cut.file.ops[p].seq});
      }
    }
    EXPECT_GE(kept.size(), 3u * 12u);
    EXPECT_LT(kept.size(), 3u * 20u);
    std::set<std::pair<uint64_t, uint64_t>> with_device;
    for (const hang_detector::DeviceCompute& d : cut.file.device_compute) {
      ASSERT_LT(d.pos, cut.file.size());
      EXPECT_EQ(cut.file.ShapeAt(d.pos).op, static_cast<uint32_t>(OpType::kDeviceCompute));
      EXPECT_EQ(cut.file.ops[d.pos].seq, d.seq);
      with_device.insert({d.comm_id, d.seq});
    }
    EXPECT_EQ(with_device, kept);
    EXPECT_EQ(cut.file.device_compute.size(), kept.size());
    cuts.push_back(std::move(cut.file));
  }
  const std::vector<Verdict> v = j.StragglersOf(cuts);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].culprits, std::vector<int>{2});
  EXPECT_TRUE(Has(v[0].summary, "compute straggler (device time): rank 2's GPU computes"))
      << v[0].summary;
}

}  // namespace
}  // namespace ncclscope::testing
