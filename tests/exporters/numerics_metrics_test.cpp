// NCCLSCOPE_NUMERICS on /metrics (docs/metrics.md): per rank and communicator the sampled
// collectives and those whose input held NaN/Inf, the samples the passes missed, and the
// correlator's nan-origin and corrupt-output verdicts as ncclscope_verdict series of stage
// "numerics", never "hang". Synthetic rings with numerics records as the probe writes them.
#include <gtest/gtest.h>

#include <string>

#include "exporters/prometheus/node_aggregator.h"
#include "hang_detector/decision/correlator.h"
#include "tests/exporters/scrape_text.h"
#include "tests/exporters/snapshot_source.h"
#include "tests/hang_detector/job_builder.h"
#include "tests/hang_detector/numerics_records.h"

namespace ncclscope::testing {
namespace {

using exporters::NodeAggregator;
using trace::OpType;

std::string NumericsSeries(const std::string& family, int rank, const std::string& comm) {
  return family + "{rank=\"" + std::to_string(rank) + "\",comm=\"" + comm + "\"}";
}
std::string Samples(int rank, const std::string& comm) {
  return NumericsSeries("ncclscope_numerics_samples_total", rank, comm);
}
std::string NonFinite(int rank, const std::string& comm) {
  return NumericsSeries("ncclscope_numerics_nonfinite_inputs_total", rank, comm);
}
std::string Skipped(int rank) {
  return "ncclscope_numerics_skipped_total{rank=\"" + std::to_string(rank) + "\"}";
}

class NumericsMetrics : public ::testing::Test {
 protected:
  SnapshotSource source;
  NodeAggregator aggregator{&source, {}};
};

// Four ranks, 8 allreduces on "world", every 2nd sampled; rank 2's input holds NaN from #6 on.
JobBuilder Poisoned(uint64_t* world) {
  JobBuilder job(4);
  *world = job.Comm("world", {0, 1, 2, 3});
  for (int k = 1; k <= 8; ++k) {
    for (int r = 0; r < 4; ++r) {
      job.Coll(r, *world, OpType::kAllReduce, k, Done::kCompleted);
      if (k % 2 != 0) continue;
      Held h;
      h.nan = r == 2 && k >= 6 ? 5 : 0;
      AddSample(&job, r, *world, k, OpType::kAllReduce, k + 0.01, h);
    }
  }
  job.HeartbeatAll(9);
  return job;
}

TEST_F(NumericsMetrics, SamplesAndPoisonedInputsPerRankAndCommunicator) {
  uint64_t world;
  JobBuilder job = Poisoned(&world);
  source.set = job.Build();
  source.set.files[1].numerics_skipped = 3;  // e.g. three sampled calls inside a graph capture
  const std::string text = Scrape(aggregator);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(Value(text, Samples(r, "world")), 4) << text;
    // Present at 0 on a clean rank, so increase() sees its first poisoned sample.
    EXPECT_EQ(Value(text, NonFinite(r, "world")), r == 2 ? 2 : 0) << text;
    EXPECT_EQ(Value(text, Skipped(r)), r == 1 ? 3 : 0) << text;
  }
  // A numerics record is the probe's own, not a call.
  EXPECT_EQ(Sum(text, "ncclscope_operations_total", {{"rank", "0"}}), 8) << text;
  EXPECT_EQ(text.find("op=\"numerics\""), std::string::npos) << text;
}

TEST_F(NumericsMetrics, AJobWithoutNumericsHasNoSuchSeries) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kCompleted);
  source.set = job.Build();
  const std::string text = Scrape(aggregator);
  EXPECT_EQ(text.find("ncclscope_numerics_samples_total{"), std::string::npos) << text;
  EXPECT_EQ(text.find("ncclscope_numerics_nonfinite_inputs_total{"), std::string::npos) << text;
  EXPECT_EQ(text.find("ncclscope_numerics_skipped_total{"), std::string::npos) << text;
}

TEST_F(NumericsMetrics, VerdictSeriesCarryTheNumericsClassesAndStage) {
  uint64_t world;
  JobBuilder job = Poisoned(&world);
  // Rank 3's output of allreduce #4 differs from ranks 0-2's.
  for (int r = 0; r < 4; ++r) {
    job.Coll(r, world, OpType::kAllReduce, 9, Done::kCompleted);
    Held h;
    h.scanned = false;
    h.hashed = true;
    h.hash = r == 3 ? 0xbad : 0x600d;
    AddSample(&job, r, world, 9, OpType::kAllReduce, 9.01, h);
  }
  job.HeartbeatAll(10);
  source.set = job.Build();
  hang_detector::AnalyzeOptions o;
  o.now_wall_ns = JobBuilder::Wall(10);
  const hang_detector::Analysis a = hang_detector::Analyze(source.set, o);
  const std::string text = Scrape(aggregator, &a);
  EXPECT_EQ(Sum(text, "ncclscope_verdict",
                {{"class", "nan-origin"}, {"rank", "2"}, {"stage", "numerics"}}),
            1)
      << text;
  EXPECT_EQ(Sum(text, "ncclscope_verdict",
                {{"class", "corrupt-output"}, {"rank", "3"}, {"stage", "numerics"}}),
            1)
      << text;
  // Only the culprits, and nothing a hang alert selects.
  EXPECT_EQ(Sum(text, "ncclscope_verdict"), 2) << text;
  EXPECT_EQ(Sum(text, "ncclscope_verdict", {{"stage", "hang"}}), 0) << text;
  EXPECT_EQ(Sum(text, "ncclscope_verdict", {{"stage", "suspect"}}), 0) << text;
}

}  // namespace
}  // namespace ncclscope::testing
