// Time in operations per NVTX phase and each rank's newest step on /metrics (docs/metrics.md,
// "NVTX phases and steps"), from synthetic rings whose contexts the test states: exact counts and
// seconds, nothing at all for a job without NVTX, the phase label bounded and escaped.
#include <gtest/gtest.h>

#include <string>

#include "exporters/prometheus/node_aggregator.h"
#include "exporters/prometheus/nvtx_phases.h"
#include "tests/exporters/scrape_text.h"
#include "tests/exporters/snapshot_source.h"
#include "tests/hang_detector/job_builder.h"
#include "tests/hang_detector/nvtx_records.h"

namespace ncclscope::testing {
namespace {

using exporters::AggregatorOptions;
using exporters::NodeAggregator;
using trace::OpType;

std::string Phase(const std::string& family, int rank, const std::string& comm,
                  const std::string& phase) {
  return family + "{rank=\"" + std::to_string(rank) + "\",comm=\"" + comm + "\",phase=\"" + phase +
         "\"}";
}
std::string PhaseOps(int rank, const std::string& comm, const std::string& phase) {
  return Phase("ncclscope_phase_operations_total", rank, comm, phase);
}
std::string PhaseSeconds(int rank, const std::string& comm, const std::string& phase) {
  return Phase("ncclscope_phase_operation_seconds_total", rank, comm, phase);
}

class NvtxPhases : public ::testing::Test {
 protected:
  NvtxPhases() { options.version = "test"; }
  FakeProbe probe;
  SnapshotSource source;
  AggregatorOptions options;
  NodeAggregator aggregator{&source, options};
};

TEST_F(NvtxPhases, AJobWithoutNvtxHasNoPhaseOrStepSeries) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) job.Coll(r, world, OpType::kAllReduce, 0.0, Done::kCompleted);
  source.set = job.Build();
  const std::string text = Scrape(aggregator);
  ASSERT_EQ(Value(text, R"(ncclscope_operations_total{rank="0",comm="world",op="allreduce"})"), 1);
  // Not even the HELP lines: nothing about phases on a job that does not say where it is.
  EXPECT_EQ(text.find("ncclscope_phase_"), std::string::npos) << text;
  EXPECT_EQ(text.find("ncclscope_rank_step"), std::string::npos) << text;
}

TEST_F(NvtxPhases, OperationsAndTheirTimeAreCountedPerRankCommAndPhase) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  const uint64_t tp = job.Comm("tp", {0, 1});
  for (int r = 0; r < 2; ++r) {
    // Before the training loop: no context (the phase "none" once the ring carries any).
    job.Coll(r, world, OpType::kBroadcast, 0.0, Done::kCompleted);
    for (uint64_t step = 10; step < 13; ++step) {
      const double t = 0.1 * static_cast<double>(step);
      job.Coll(r, tp, OpType::kAllGather, t, Done::kCompleted).reserved = NvtxWord(step, 1);
      job.Coll(r, tp, OpType::kReduceScatter, t + 0.01, Done::kCompleted).reserved =
          NvtxWord(step, 2);
      job.Coll(r, world, OpType::kAllReduce, t + 0.02, Done::kCompleted).reserved =
          NvtxWord(step, 2);
      job.Coll(r, world, OpType::kAllReduce, t + 0.03, Done::kCompleted).reserved =
          NvtxWord(step, 3);
    }
    // Rank 1 has already issued step 13's first collective, still on the device: not counted
    // yet, but its step is the newest.
    if (r == 1) {
      job.Coll(r, tp, OpType::kAllGather, 1.3, Done::kPending).reserved = NvtxWord(13, 1);
    }
  }
  trace::TraceSet set = job.Build();
  AddNameRecords(&set,
                 {{1, "forward", "layer3"}, {2, "backward", "backward"}, {3, "optimizer", ""}});
  source.set = set;
  const std::string text = Scrape(aggregator);

  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(Value(text, PhaseOps(r, "tp", "forward")), 3) << text;
    EXPECT_EQ(Value(text, PhaseOps(r, "tp", "backward")), 3);
    EXPECT_EQ(Value(text, PhaseOps(r, "world", "backward")), 3);
    EXPECT_EQ(Value(text, PhaseOps(r, "world", "optimizer")), 3);
    EXPECT_EQ(Value(text, PhaseOps(r, "world", "none")), 1);
    // Phases a communicator was not used in have no series.
    EXPECT_EQ(Value(text, PhaseOps(r, "tp", "optimizer")), std::nullopt);
    // Every completion in the builder lands 1 ms after its entry.
    EXPECT_NEAR(*Value(text, PhaseSeconds(r, "world", "backward")), 0.003, 1e-9);
    EXPECT_NEAR(*Value(text, PhaseSeconds(r, "world", "none")), 0.001, 1e-9);
  }
  // The phases partition the completed operations: their sum is the duration histogram's.
  EXPECT_EQ(Sum(text, "ncclscope_phase_operations_total"), 26);
  EXPECT_EQ(Value(text, R"(ncclscope_rank_step{rank="0"})"), 12);
  EXPECT_EQ(Value(text, R"(ncclscope_rank_step{rank="1"})"), 13);
  // The step is never a label.
  EXPECT_EQ(text.find("step=\""), std::string::npos);
}

TEST_F(NvtxPhases, PhaseNamesPastTheCapReadOther) {
  const int phases = static_cast<int>(exporters::kMaxPhaseLabels) + 3;
  JobBuilder job(1);
  const uint64_t world = job.Comm("world", {0});
  std::vector<NvtxContextName> names;
  for (int p = 0; p < phases; ++p) {
    const auto id = static_cast<uint32_t>(p + 1);
    names.push_back({id, "microbatch" + std::to_string(p), ""});
    job.Coll(0, world, OpType::kAllReduce, p * 0.01, Done::kCompleted).reserved = NvtxWord(7, id);
  }
  trace::TraceSet set = job.Build();
  AddNameRecords(&set, names);
  source.set = set;
  const std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, PhaseOps(0, "world", "microbatch0")), 1) << text;
  EXPECT_EQ(Value(text, PhaseOps(0, "world", "microbatch7")), 1);
  EXPECT_EQ(Value(text, PhaseOps(0, "world", "microbatch8")), std::nullopt);
  EXPECT_EQ(Value(text, PhaseOps(0, "world", "other")), 3);
  EXPECT_EQ(Sum(text, "ncclscope_phase_operations_total"), phases);
}

TEST_F(NvtxPhases, PhaseNamesAreEscapedAndMadeValidUtf8) {
  JobBuilder job(1);
  const uint64_t world = job.Comm("world", {0});
  job.Coll(0, world, OpType::kAllReduce, 0.0, Done::kCompleted).reserved = NvtxWord(1, 1);
  job.Coll(0, world, OpType::kAllReduce, 0.1, Done::kCompleted).reserved = NvtxWord(1, 2);
  trace::TraceSet set = job.Build();
  // The second name is cut inside a two-byte character ("é" is C3 A9), as the probe's 47-byte
  // cut can leave it.
  AddNameRecords(&set, {{1, "fwd \"a\\b\"\nx", ""}, {2, "caf\xC3", ""}});
  source.set = set;
  const std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, PhaseOps(0, "world", R"(fwd \"a\\b\"\nx)")), 1) << text;
  EXPECT_EQ(Value(text, PhaseOps(0, "world", "caf\xEF\xBF\xBD")), 1) << text;
}

TEST_F(NvtxPhases, AContextWhoseNamesWereNeverReadIsUnknown) {
  JobBuilder job(1);
  const uint64_t world = job.Comm("world", {0});
  // Context 4's name records were overwritten before the exporter read them; 255: the process
  // had more than 254 contexts, so its names were never written.
  job.Coll(0, world, OpType::kAllReduce, 0.0, Done::kCompleted).reserved = NvtxWord(5, 4);
  job.Coll(0, world, OpType::kAllReduce, 0.1, Done::kCompleted).reserved =
      NvtxWord(5, trace::kNvtxContextFull);
  // Inside step 6 and no range below it: no phase.
  job.Coll(0, world, OpType::kAllReduce, 0.2, Done::kCompleted).reserved = NvtxWord(6, 0);
  source.set = job.Build();
  const std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, PhaseOps(0, "world", "unknown")), 2) << text;
  EXPECT_EQ(Value(text, PhaseOps(0, "world", "none")), 1);
  EXPECT_EQ(Value(text, R"(ncclscope_rank_step{rank="0"})"), 6);
}

TEST_F(NvtxPhases, CountersKeepWhatEarlierScrapesCounted) {
  JobBuilder job(1);
  const uint64_t world = job.Comm("world", {0});
  job.Coll(0, world, OpType::kAllReduce, 0.0, Done::kCompleted).reserved = NvtxWord(1, 1);
  trace::TraceSet set = job.Build();
  AddNameRecords(&set, {{1, "forward", ""}});
  source.set = set;
  EXPECT_EQ(Value(Scrape(aggregator), PhaseOps(0, "world", "forward")), 1);
  // The next scrape reads only what is new (one more call in forward), the names long read.
  trace::RingSnapshot& ring = source.set.files[0];
  trace::StoredRecord next = ring.records.back();
  next.index = ring.records.size();
  next.data.seq += 1;
  next.data.reserved = NvtxWord(2, 1);
  ring.records.push_back(next);
  ring.write_pos = ring.records.size();
  const std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, PhaseOps(0, "world", "forward")), 2) << text;
  EXPECT_EQ(Value(text, R"(ncclscope_rank_step{rank="0"})"), 2);
}

TEST(ValidUtf8, KeepsValidTextAndReplacesEachBadByte) {
  EXPECT_EQ(exporters::ValidUtf8("backward"), "backward");
  EXPECT_EQ(exporters::ValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  const std::string bad = "\xEF\xBF\xBD";
  EXPECT_EQ(exporters::ValidUtf8("a\xFF"), "a" + bad);
  EXPECT_EQ(exporters::ValidUtf8("\xC0\xAF"), bad + bad);            // overlong '/'
  EXPECT_EQ(exporters::ValidUtf8("\xED\xA0\x80"), bad + bad + bad);  // a surrogate
  EXPECT_EQ(exporters::ValidUtf8("\xE2\x82"), bad + bad);            // cut short
}

}  // namespace
}  // namespace ncclscope::testing
