// Calls on ncclscope's own kernels against calls on NCCL, and the kernels that gave up waiting, on
// /metrics (docs/metrics.md; docs/collectives.md, "Routing"), from synthetic rings whose records
// say which engine ran each call: exact counts per rank, communicator and op, every operation
// series with its accelerated twin, and the stall counter at 0 before the first stall.
#include <gtest/gtest.h>

#include <string>

#include "exporters/prometheus/node_aggregator.h"
#include "tests/exporters/scrape_text.h"
#include "tests/exporters/snapshot_source.h"
#include "tests/hang_detector/job_builder.h"
#include "trace/record.h"

namespace ncclscope::testing {
namespace {

using exporters::NodeAggregator;
using trace::OpType;

std::string Series(const std::string& family, int rank, const std::string& comm,
                   const std::string& op = "") {
  return family + "{rank=\"" + std::to_string(rank) + "\",comm=\"" + comm + "\"" +
         (op.empty() ? "" : ",op=\"" + op + "\"") + "}";
}
std::string Accelerated(int rank, const std::string& comm, const std::string& op) {
  return Series("ncclscope_accelerated_operations_total", rank, comm, op);
}
std::string Operations(int rank, const std::string& comm, const std::string& op) {
  return Series("ncclscope_operations_total", rank, comm, op);
}
std::string Stalls(int rank, const std::string& comm) {
  return Series("ncclscope_accel_stalls_total", rank, comm);
}

void Routed(JobBuilder& job, int rank, uint64_t comm, double t) {
  job.Coll(rank, comm, OpType::kAllReduce, t, Done::kCompleted, 4096, /*bf16*/ 9).flags |=
      trace::kFlagAccelerated;
}

// What the routing writes when it finds that the kernel of collective #seq gave up waiting.
void Stall(JobBuilder& job, int rank, uint64_t comm, uint64_t seq, int waited_for, double t) {
  trace::RecordData& r = job.ProbeRecord(rank, comm, OpType::kAccelStall, t);
  r.seq = seq;
  r.peer = waited_for;
  r.dtype = 0;  // block
  r.redop = 0;  // start barrier
  r.count = seq;
}

class AccelMetrics : public ::testing::Test {
 protected:
  SnapshotSource source;
  NodeAggregator aggregator{&source, {}};
};

TEST_F(AccelMetrics, RoutedAndNcclCallsAreCountedPerRankCommunicatorAndOp) {
  JobBuilder job(2);
  const uint64_t tp = job.Comm("tp", {0, 1});
  const uint64_t world = job.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) {
    // tp: three allreduces on ncclscope's kernels, one too large for them, one allgather.
    for (int i = 0; i < 3; ++i) Routed(job, r, tp, 1.0 + i);
    job.Coll(r, tp, OpType::kAllReduce, 4.0, Done::kCompleted, 1 << 26, 9);
    job.Coll(r, tp, OpType::kAllGather, 5.0, Done::kCompleted);
    // world: NCCL only (another host in the communicator, say).
    job.Coll(r, world, OpType::kAllReduce, 6.0, Done::kCompleted);
  }
  source.set = job.Build();
  const std::string text = Scrape(aggregator);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(Value(text, Operations(r, "tp", "allreduce")), 4) << text;
    EXPECT_EQ(Value(text, Accelerated(r, "tp", "allreduce")), 3) << text;
    // Present at 0: the share on ncclscope's kernels is a division with a series on both sides.
    EXPECT_EQ(Value(text, Accelerated(r, "tp", "allgather")), 0) << text;
    EXPECT_EQ(Value(text, Accelerated(r, "world", "allreduce")), 0) << text;
    // A communicator that ran on the kernels has its stall counter from then on; one that never
    // did has none.
    EXPECT_EQ(Value(text, Stalls(r, "tp")), 0) << text;
    EXPECT_EQ(Value(text, Stalls(r, "world")), std::nullopt) << text;
  }
  EXPECT_EQ(Sum(text, "ncclscope_accelerated_operations_total"), 6);
}

TEST_F(AccelMetrics, AJobWithoutRoutingHasZerosAndNoStallSeries) {
  JobBuilder job(1);
  const uint64_t world = job.Comm("world", {0});
  job.Coll(0, world, OpType::kAllReduce, 1.0, Done::kCompleted);
  source.set = job.Build();
  const std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, Accelerated(0, "world", "allreduce")), 0) << text;
  EXPECT_EQ(text.find("ncclscope_accel_stalls_total{"), std::string::npos) << text;
}

TEST_F(AccelMetrics, AStallCountsOnTheRankWhoseKernelGaveUpAndIsNotAnOperation) {
  JobBuilder job(2);
  const uint64_t tp = job.Comm("tp", {0, 1});
  for (int r = 0; r < 2; ++r) Routed(job, r, tp, 1.0);
  source.set = job.Build();
  std::string text = Scrape(aggregator);
  // Before the stall the counter is there at 0, so increase() sees the step to 1.
  ASSERT_EQ(Value(text, Stalls(0, "tp")), 0) << text;
  ASSERT_EQ(Value(text, Stalls(1, "tp")), 0) << text;

  // Rank 1 entered collective #2 on the kernels, rank 0 never did; rank 1's kernel gave up on
  // rank 0, and its next call (#3) found the stall and went to NCCL.
  Routed(job, 0, tp, 2.0);
  Stall(job, 1, tp, 2, /*waited_for=*/0, 3.0);
  job.Coll(1, tp, OpType::kAllReduce, 3.0, Done::kCompleted, 4096, 9);
  source.set = job.Build();
  text = Scrape(aggregator);
  EXPECT_EQ(Value(text, Stalls(1, "tp")), 1) << text;
  EXPECT_EQ(Value(text, Stalls(0, "tp")), 0) << text;
  // The stall record is the probe's own, not a call: operation counts are the calls made.
  EXPECT_EQ(Value(text, Operations(1, "tp", "allreduce")), 2) << text;
  EXPECT_EQ(Value(text, Accelerated(1, "tp", "allreduce")), 1) << text;
  EXPECT_EQ(Value(text, Accelerated(0, "tp", "allreduce")), 2) << text;
  EXPECT_EQ(text.find("op=\"accel_stall\""), std::string::npos) << text;
}

}  // namespace
}  // namespace ncclscope::testing
