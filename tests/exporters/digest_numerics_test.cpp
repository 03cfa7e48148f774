// NCCLSCOPE_NUMERICS through a node's digest: a job split over two nodes, one node's ranks read as
// ring files and the other's as its digest, gets the same nan-origin and corrupt-output verdicts
// as from all ring files, although the digest keeps only a frontier of each ring; a digest of an
// older producer (no numerics entries) still decodes, and entries that do not fit the records are
// refused with the reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exporters/multinode/digest.pb.h"
#include "exporters/multinode/digest_codec.h"
#include "hang_detector/decision/correlator.h"
#include "hang_detector/ingest/job_index.h"
#include "hang_detector/ingest/rank_digest.h"
#include "tests/hang_detector/job_builder.h"
#include "tests/hang_detector/numerics_records.h"

namespace ncclscope::testing {
namespace {

namespace hd = hang_detector;
using trace::OpType;

constexpr int kTwoNodeRanks = 8;   // node A: ranks 0-3 (ring files); node B: ranks 4-7 (digest)
constexpr int kCollectives = 200;  // far more than a digest keeps per communicator
constexpr double kNow = 30;

// Rank 5 (node B) feeds a NaN into allreduce #12, which spreads from #13; rank 6's output of #196
// differs from everyone else's. Every 4th allreduce is sampled, input scanned and output hashed.
trace::TraceSet NumericsJob() {
  JobBuilder job(kTwoNodeRanks);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3, 4, 5, 6, 7});
  for (int k = 1; k <= kCollectives; ++k) {
    for (int r = 0; r < kTwoNodeRanks; ++r) {
      job.Coll(r, world, OpType::kAllReduce, 0.1 * k, Done::kCompleted);
      if (k % 4 != 0) continue;
      Held h;
      h.nan = (r == 5 && k >= 12) || k >= 13 ? 1 : 0;
      h.hashed = true;
      h.hash = r == 6 && k == 196 ? 0xbad : 0x600d + static_cast<uint64_t>(k);
      AddSample(&job, r, world, k, OpType::kAllReduce, 0.1 * k + 0.01, h);
    }
  }
  job.HeartbeatAll(kNow);
  return job.Build();
}

std::string DigestOfNodeB(const std::vector<hd::RankFile>& files) {
  std::vector<hd::RankFile> cuts;
  for (int r = 4; r < kTwoNodeRanks; ++r) cuts.push_back(hd::CutForDigest(files[r], {}).file);
  std::vector<exporters::DigestRank> ranks;
  for (const hd::RankFile& f : cuts) ranks.push_back({&f, hd::ProcessState::kRunning, 0});
  exporters::DigestHeader h;
  h.host = "node-b";
  h.job_id = "job-1";
  h.built_at_ns = h.produced_at_ns = JobBuilder::Wall(kNow);
  return exporters::EncodeNodeDigest(h, ranks);
}

// Node A's ring files and node B's digest, as the correlating exporter assembles them.
hd::Analysis AnalyzeAcrossNodes(const std::string& digest) {
  std::vector<hd::RankFile> files = CompactFiles(NumericsJob());
  exporters::DecodedDigest d;
  std::string error;
  EXPECT_TRUE(exporters::DecodeNodeDigest(digest, "http://node-b:9478/digest",
                                          JobBuilder::Wall(kNow), &d, &error))
      << error;
  files.resize(4);
  for (hd::RankFile& f : d.files) files.push_back(std::move(f));
  hd::AnalyzeOptions o;
  o.now_wall_ns = JobBuilder::Wall(kNow);
  return hd::Analyze(hd::JobIndex::FromFiles(std::move(files), {}), o);
}

const hd::Verdict* Find(const hd::Analysis& a, hd::VerdictClass c) {
  for (const hd::Verdict& v : a.verdicts) {
    if (v.cls == c) return &v;
  }
  return nullptr;
}

TEST(DigestNumerics, VerdictsHoldAcrossNodes) {
  const std::vector<hd::RankFile> files = CompactFiles(NumericsJob());
  const hd::DigestCut cut = hd::CutForDigest(files[5], {});
  EXPECT_GT(cut.omitted, 150u);  // of 250 records: a frontier, not the ring
  const hd::Analysis a = AnalyzeAcrossNodes(DigestOfNodeB(files));
  const hd::Verdict* nan = Find(a, hd::VerdictClass::kNanOrigin);
  ASSERT_NE(nan, nullptr);
  EXPECT_EQ(nan->seq, 12u);
  EXPECT_EQ(nan->culprits, std::vector<int>{5});
  EXPECT_EQ(nan->unseen_count, 0);
  EXPECT_NE(nan->summary.find("while ranks 0-4,6,7 were clean"), std::string::npos) << nan->summary;
  const hd::Verdict* corrupt = Find(a, hd::VerdictClass::kCorruptOutput);
  ASSERT_NE(corrupt, nullptr);
  EXPECT_EQ(corrupt->seq, 196u);
  EXPECT_EQ(corrupt->culprits, std::vector<int>{6});
}

TEST(DigestNumerics, ADigestWithoutNumericsStillDecodesAndBlamesNobody) {
  const std::vector<hd::RankFile> files = CompactFiles(NumericsJob());
  digest::NodeDigest old;
  ASSERT_TRUE(old.ParseFromString(DigestOfNodeB(files)));
  for (auto& r : *old.mutable_ranks()) r.clear_numerics();  // as an older producer writes it
  const hd::Analysis a = AnalyzeAcrossNodes(old.SerializeAsString());
  // Node A alone: clean at #12, poisoned everywhere it sees at #16; node B's ranks are unknown.
  const hd::Verdict* nan = Find(a, hd::VerdictClass::kNanOrigin);
  ASSERT_NE(nan, nullptr);
  EXPECT_EQ(nan->seq, 16u);
  EXPECT_TRUE(nan->culprits.empty());
  EXPECT_EQ(nan->unseen, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(Find(a, hd::VerdictClass::kCorruptOutput), nullptr);
}

TEST(DigestNumerics, AnEntryAtAnotherRecordIsRefused) {
  const std::vector<hd::RankFile> files = CompactFiles(NumericsJob());
  digest::NodeDigest d;
  ASSERT_TRUE(d.ParseFromString(DigestOfNodeB(files)));
  auto* entry = d.mutable_ranks(0)->mutable_numerics(0);
  entry->set_pos(entry->pos() - 1);  // the allreduce's own record
  exporters::DecodedDigest out;
  std::string error;
  EXPECT_FALSE(exporters::DecodeNodeDigest(d.SerializeAsString(), "node-b", JobBuilder::Wall(kNow),
                                           &out, &error));
  EXPECT_NE(error.find("numerics entry 0 out of order or not at a numerics record"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace ncclscope::testing
