// NCCLSCOPE_CUPTI's device time through a node's digest: the device_compute entries of the
// collectives a cut keeps come back whole on the receiving node, so its straggler verdict tells a
// compute straggler from a slow link as the producing node's does; entries that do not fit the
// records are refused with the reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exporters/multinode/digest.pb.h"
#include "exporters/multinode/digest_codec.h"
#include "hang_detector/ingest/rank_digest.h"
#include "tests/exporters/node_digest_bytes.h"
#include "tests/hang_detector/device_compute_job.h"

namespace ncclscope::testing {
namespace {

namespace hd = hang_detector;
using device_compute_job::Job;
using device_compute_job::kCompute;
using device_compute_job::kRanks;

// Rank 2's transfers are slow from step 4 on and its GPU computes twice as long there: to host
// times a slow link, to device times a compute straggler.
std::vector<hd::RankFile> CutsOfASlowComputeRank(Job* j) {
  j->model.link_slow = {{2, 3.0, 4}};
  j->Run([&](int s) {
    for (int r = 0; r < kRanks; ++r) {
      j->DeviceComputeOfStep(r, s, r == 2 && s >= 4 ? 2 * kCompute : kCompute);
    }
  });
  hd::DigestLimits limits;
  limits.per_comm = 12;
  limits.newest = 4;
  std::vector<hd::RankFile> cuts;
  for (const hd::RankFile& f : j->Files()) cuts.push_back(hd::CutForDigest(f, limits).file);
  return cuts;
}

TEST(DigestDeviceCompute, EntriesTravelWholeAndTheVerdictStaysAComputeStraggler) {
  Job j;
  const std::vector<hd::RankFile> cuts = CutsOfASlowComputeRank(&j);
  const int64_t produced = JobBuilder::Wall(j.model.Now());
  exporters::DecodedDigest d;
  std::string error;
  ASSERT_TRUE(exporters::DecodeNodeDigest(EncodeDigest(cuts, produced), "http://node-a:9478/digest",
                                          produced, &d, &error))
      << error;
  ASSERT_EQ(d.files.size(), cuts.size());
  for (size_t i = 0; i < cuts.size(); ++i) {
    const auto& sent = cuts[i].device_compute;
    const auto& got = d.files[i].device_compute;
    ASSERT_FALSE(sent.empty());
    ASSERT_EQ(got.size(), sent.size());
    for (size_t k = 0; k < sent.size(); ++k) {
      EXPECT_EQ(got[k].pos, sent[k].pos);
      EXPECT_EQ(got[k].comm_id, sent[k].comm_id);
      EXPECT_EQ(got[k].seq, sent[k].seq);
      EXPECT_EQ(got[k].group_id, sent[k].group_id);
      EXPECT_EQ(got[k].launch_op, sent[k].launch_op);
      EXPECT_EQ(got[k].kernels, sent[k].kernels);
      EXPECT_EQ(got[k].compute_ns, sent[k].compute_ns);
      EXPECT_EQ(got[k].gpu_start, sent[k].gpu_start);
    }
  }
  const std::vector<Verdict> v = j.StragglersOf(d.files);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].culprits, std::vector<int>{2});
  EXPECT_NE(v[0].summary.find("compute straggler (device time): rank 2's GPU computes 20.0 ms"),
            std::string::npos)
      << v[0].summary;
}

TEST(DigestDeviceCompute, EntriesThatDoNotFitTheRecordsAreRefused) {
  Job j;
  const std::vector<hd::RankFile> cuts = CutsOfASlowComputeRank(&j);
  ncclscope::digest::NodeDigest good;
  ASSERT_TRUE(good.ParseFromString(EncodeDigest(cuts, JobBuilder::Wall(1))));
  ASSERT_GT(good.ranks(0).device_compute_size(), 1);
  auto refusal = [&](auto mutate) {
    ncclscope::digest::NodeDigest bad = good;
    mutate(bad.mutable_ranks(0));
    exporters::DecodedDigest d;
    std::string error;
    EXPECT_FALSE(exporters::DecodeNodeDigest(bad.SerializeAsString(), "src", JobBuilder::Wall(1),
                                             &d, &error));
    return error;
  };
  using Rank = ncclscope::digest::RankDigest;
  EXPECT_NE(refusal([](Rank* r) {
              r->mutable_device_compute(0)->set_pos(0);
            }).find("device_compute entry 0 out of order or not at a device_compute record"),
            std::string::npos);  // position 0 holds a collective
  EXPECT_NE(refusal([](Rank* r) {
              r->mutable_device_compute(1)->set_pos(1u << 30);
            }).find("device_compute entry 1 out of order"),
            std::string::npos);
  EXPECT_NE(refusal([](Rank* r) {
              r->mutable_device_compute(0)->set_compute_ns(-2);
            }).find("device_compute entry 0: compute time of -2 ns"),
            std::string::npos);
}

}  // namespace
}  // namespace ncclscope::testing
