// `ncclscope stats`' table (exporters/stats/cost_table.h): nccl-tests' bandwidth formulas, exact
// quantiles and lateness on a synthetic job, and agreement with the exporter's /metrics for the
// same records.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exporters/measures/operation_size.h"
#include "exporters/measures/size_classes.h"
#include "exporters/prometheus/node_aggregator.h"
#include "exporters/stats/cost_table.h"
#include "tests/exporters/scrape_text.h"
#include "tests/exporters/snapshot_source.h"
#include "tests/hang_detector/job_builder.h"

namespace ncclscope::testing {
namespace {

using exporters::BusBandwidthFactor;
using exporters::CostRow;
using exporters::CostTable;
using trace::OpType;

constexpr int64_t kMs = 1000000;

// NVIDIA/nccl-tests doc/PERFORMANCE.md: the bus bandwidth factor per operation, e.g. 1.75 for an
// 8-rank AllReduce.
TEST(BusBandwidth, FactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kAllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kAllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kAlltoAll, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kBroadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kReduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kSend, 8), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kAllReduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kAllReduce, -1), 0.0);  // size unknown
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(OpType::kGroupEnd, 8), 0.0);
}

class CostTableTest : public ::testing::Test {
 protected:
  // The table of `set`, read as `ncclscope stats` reads a directory.
  CostTable Table(const trace::TraceSet& set) {
    source.set = set;
    CostTable t;
    std::string error;
    EXPECT_TRUE(exporters::BuildCostTable(source, &t, &error)) << error;
    return t;
  }
  SnapshotSource source;
};

TEST_F(CostTableTest, QuantilesBandwidthAndTheLateRankAreExact) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  for (int i = 0; i < 10; ++i) {
    const double t = 0.1 * (i + 1);
    trace::RecordData& r0 = job.Coll(0, world, OpType::kAllReduce, t, Done::kCompleted);
    r0.t_device_done_ns = r0.t_enter_ns + (i + 1) * kMs;
    trace::RecordData& r1 = job.Coll(1, world, OpType::kAllReduce, t, Done::kCompleted);
    r1.t_device_done_ns = r1.t_enter_ns + kMs;
  }
  job.Coll(0, world, OpType::kAllReduce, 1.5, Done::kPending);
  const CostTable t = Table(job.Build());

  ASSERT_EQ(t.files, 2u);
  ASSERT_EQ(t.rows.size(), 1u);
  const CostRow& r = t.rows[0];
  EXPECT_EQ(r.comm_name, "world");
  EXPECT_EQ(r.nranks, 2);
  EXPECT_EQ(r.op, OpType::kAllReduce);
  EXPECT_STREQ(exporters::kSizeClasses[r.size_class], "<=64KiB");
  EXPECT_EQ(r.calls, 20u);          // the running one is not timed
  EXPECT_EQ(r.bytes, 20u * 1024u);  // 256 float32 each
  // Sorted: eleven of 1 ms, then 2..10 ms. Nearest rank: the 10th, 18th and 20th.
  EXPECT_NEAR(r.p50_s, 0.001, 1e-12);
  EXPECT_NEAR(r.p90_s, 0.008, 1e-12);
  EXPECT_NEAR(r.p99_s, 0.010, 1e-12);
  EXPECT_NEAR(r.mean_s, 0.065 / 20, 1e-12);
  EXPECT_NEAR(r.algbw_gbs, 20.0 * 1024 / 0.065 / 1e9, 1e-12);
  EXPECT_NEAR(r.busbw_gbs, r.algbw_gbs, 1e-12);  // 2(n-1)/n = 1 at two ranks
  // Rank 1 waited d - 1 ms less than rank 0 each time: 0..9 ms, 4.5 ms on average.
  EXPECT_EQ(r.slowest_rank, 1);
  EXPECT_NEAR(r.slowest_lateness_s, 0.0045, 1e-12);

  ASSERT_EQ(t.ranks.size(), 2u);
  EXPECT_EQ(t.ranks[0].rank, 0);
  EXPECT_EQ(t.ranks[0].calls, 10u);
  EXPECT_EQ(t.ranks[0].pending, 1u);
  EXPECT_NEAR(t.ranks[0].seconds, 0.055, 1e-12);
  EXPECT_NEAR(t.ranks[0].mean_lateness_s, 0.0, 1e-12);
  EXPECT_EQ(t.ranks[1].pending, 0u);
  EXPECT_NEAR(t.ranks[1].mean_lateness_s, 0.0045, 1e-12);
}

TEST_F(CostTableTest, ARankWaitingOnItsOwnStreamIsNotLate) {
  // Rank 1 enqueues #2 while #1 still runs on its stream: #2's device work starts at #1's end, so
  // its wait is counted from there, as the exporter's straggler score counts it.
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) {
    trace::RecordData& a = job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
    a.t_device_done_ns = a.t_enter_ns + 10 * kMs;
    const int64_t a_enter = a.t_enter_ns;  // `a` moves when the rank's records grow
    trace::RecordData& b =
        job.Coll(r, world, OpType::kAllReduce, r == 0 ? 0.105 : 0.2, Done::kCompleted);
    b.t_device_done_ns = a_enter + 105 * kMs;  // at 0.205 s
  }
  const CostTable t = Table(job.Build());
  ASSERT_EQ(t.rows.size(), 1u);
  // #2 ends at 0.205 on both; rank 0's work started at 0.11 (its #1's end), rank 1's at 0.2:
  // rank 1 arrived last, 90 ms late on #2; nobody is late on #1.
  EXPECT_EQ(t.rows[0].slowest_rank, 1);
  EXPECT_NEAR(t.rows[0].slowest_lateness_s, 0.090 / 2, 1e-9);
}

// With NCCLSCOPE_CUPTI=1 each NCCL kernel's GPU time is recorded (device_compute: aux its GPU
// start, send_buffer its end); a row whose every call has one is timed on the device.
TEST_F(CostTableTest, KernelTimesFromCuptiTimeTheRowWhenEveryCallHasOne) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  auto kernel = [&](int rank, uint64_t seq, double t, int64_t gpu_ns) {
    trace::RecordData& k = job.ProbeRecord(rank, world, OpType::kDeviceCompute, t);
    k.seq = seq;
    k.aux = 5000000000ull;
    k.send_buffer = k.aux + static_cast<uint64_t>(gpu_ns);
  };
  for (uint64_t seq = 1; seq <= 4; ++seq) {
    const double t = 0.1 * static_cast<double>(seq);
    job.Coll(0, world, OpType::kAllReduce, t, Done::kCompleted);
    job.Coll(1, world, OpType::kAllReduce, t, Done::kCompleted);
    kernel(0, seq, t + 0.01, static_cast<int64_t>(seq) * 100000);  // 0.1 .. 0.4 ms
    kernel(1, seq, t + 0.01, 100000);
  }
  // A kernel launched for a whole group (comm and seq 0) belongs to no single row.
  trace::RecordData& group = job.ProbeRecord(0, 0, OpType::kDeviceCompute, 0.5);
  group.aux = 1;
  group.send_buffer = 1000000001;
  const CostTable device = Table(job.Build());
  ASSERT_EQ(device.rows.size(), 1u);
  EXPECT_STREQ(device.rows[0].timing, "device");
  EXPECT_EQ(device.rows[0].device_calls, 8u);
  // Sorted: five of 0.1 ms, then 0.2, 0.3, 0.4 ms.
  EXPECT_NEAR(device.rows[0].p50_s, 0.0001, 1e-12);
  EXPECT_NEAR(device.rows[0].p99_s, 0.0004, 1e-12);
  EXPECT_NEAR(device.rows[0].algbw_gbs, 8.0 * 1024 / 0.0014 / 1e9, 1e-9);

  // One call without its kernel time: the row falls back to host times, saying how many had one.
  job.Coll(0, world, OpType::kAllReduce, 0.6, Done::kCompleted);
  job.Coll(1, world, OpType::kAllReduce, 0.6, Done::kCompleted);
  const CostTable host = Table(job.Build());
  EXPECT_STREQ(host.rows[0].timing, "host");
  EXPECT_EQ(host.rows[0].calls, 10u);
  EXPECT_EQ(host.rows[0].device_calls, 8u);
  EXPECT_NEAR(host.rows[0].p50_s, 0.001, 1e-12);  // JobBuilder's 1 ms call-to-completion
}

TEST_F(CostTableTest, CommunicatorsAndSizeClassesAreSeparateRows) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  const uint64_t pair = job.Comm("", {0, 1}, world, 1);  // unnamed: shown by its id
  for (int r = 0; r < 2; ++r) {
    job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.Coll(r, world, OpType::kAllReduce, 0.2, Done::kCompleted, uint64_t{1} << 20);  // 4 MiB
    job.Coll(r, pair, OpType::kAllGather, 0.3, Done::kCompleted, 100);
    job.Send(r, world, 1 - r, 0.4, Done::kCompleted);
  }
  const CostTable t = Table(job.Build());
  ASSERT_EQ(t.rows.size(), 4u);
  int world_allreduce = 0;
  for (const CostRow& r : t.rows) {
    EXPECT_EQ(r.calls, 2u);
    if (r.comm_id == world && r.op == OpType::kAllReduce) ++world_allreduce;
    if (r.comm_id == pair) {
      EXPECT_EQ(r.comm_name.size(), 16u);  // its id in hex
      EXPECT_EQ(r.bytes, 2u * 800u);       // 100 float32 from each of 2 ranks, per rank
      EXPECT_NEAR(r.busbw_gbs, r.algbw_gbs * 0.5, 1e-12);
    }
    if (r.op == OpType::kSend) {
      EXPECT_EQ(r.slowest_rank, -1);  // lateness is for collectives
    }
  }
  EXPECT_EQ(world_allreduce, 2);  // <=64KiB and <=16MiB
}

// A split makes several communicators of one name (tp of ranks 0,1 and of 2,3); each row says
// which by its members, in the correlator's rank notation, in the order of the members.
TEST_F(CostTableTest, CommunicatorsOfOneNameAreToldApartByTheirMembers) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  const uint64_t tp_high = job.Comm("tp", {2, 3}, world, 1);
  const uint64_t tp_low = job.Comm("tp", {0, 1}, world, 1);
  for (int r = 0; r < 4; ++r) {
    const uint64_t tp = r < 2 ? tp_low : tp_high;
    // Any count and datatype of one size class is one row.
    job.Coll(r, tp, OpType::kAllReduce, 0.1, Done::kCompleted, 256, kFloat32);
    job.Coll(r, tp, OpType::kAllReduce, 0.2, Done::kCompleted, 1000, kFloat16);
    job.Coll(r, world, OpType::kAllGather, 0.3, Done::kCompleted);
  }
  const CostTable t = Table(job.Build());
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0].comm_label, "tp (ranks 0,1)");
  EXPECT_EQ(t.rows[0].comm_id, tp_low);
  EXPECT_EQ(t.rows[0].members, (std::vector<int>{0, 1}));
  EXPECT_EQ(t.rows[0].calls, 4u);
  EXPECT_EQ(t.rows[1].comm_label, "tp (ranks 2,3)");
  EXPECT_EQ(t.rows[1].comm_id, tp_high);
  EXPECT_EQ(t.rows[1].members, (std::vector<int>{2, 3}));
  EXPECT_EQ(t.rows[2].comm_label, "world (ranks 0-3)");
  for (const CostRow& r : t.rows)
    EXPECT_EQ(r.comm_name, r.comm_label.substr(0, r.comm_name.size()));
  // Every communicator of the files, by id, rows or not.
  ASSERT_EQ(t.comms.size(), 3u);
  const exporters::CommInstance* high = exporters::FindCommInstance(t.comms, tp_high);
  ASSERT_NE(high, nullptr);
  EXPECT_EQ(high->label, "tp (ranks 2,3)");
  EXPECT_EQ(exporters::FindCommInstance(t.comms, 42), nullptr);
}

// Two communicators of one name over the same ranks (one re-created) still read differently, and
// members without a file are counted.
TEST_F(CostTableTest, ACommunicatorsLabelIsUniqueAndCountsItsUnseenMembers) {
  JobBuilder job(3);
  const uint64_t world = job.Comm("world", {0, 1, 2});
  const uint64_t first = job.Comm("tp", {0, 1}, world, 1);
  const uint64_t again = job.Comm("tp", {0, 1}, world, 2);
  for (int r = 0; r < 3; ++r) job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
  for (int r = 0; r < 2; ++r) {
    job.Coll(r, first, OpType::kAllReduce, 0.2, Done::kCompleted);
    job.Coll(r, again, OpType::kAllReduce, 0.3, Done::kCompleted);
  }
  job.RemoveFile(2);
  const CostTable t = Table(job.Build());
  ASSERT_EQ(t.rows.size(), 3u);
  const std::string a = t.rows[0].comm_label, b = t.rows[1].comm_label;
  EXPECT_NE(a, b);
  for (const std::string& label : {a, b}) {
    EXPECT_EQ(label.rfind("tp (ranks 0,1, id ", 0), 0u) << label;
    EXPECT_EQ(label.size(), std::string("tp (ranks 0,1, id 01234567)").size()) << label;
  }
  EXPECT_EQ(t.rows[2].comm_label, "world (ranks 0,1; 1 unseen)");
  EXPECT_EQ(t.rows[2].members, (std::vector<int>{0, 1}));
}

// One implementation: for the same records, the table's calls, bytes and summed durations per
// (communicator, operation) are the exporter's duration count and sum and its byte counter.
TEST_F(CostTableTest, AgreesWithTheExportersMetrics) {
  JobBuilder job(3);
  const uint64_t world = job.Comm("world", {0, 1, 2});
  const uint64_t tp = job.Comm("tp", {0, 1}, world, 1);
  for (int r = 0; r < 3; ++r) {
    for (int i = 0; i < 5; ++i) {
      trace::RecordData& a =
          job.Coll(r, world, OpType::kAllReduce, 0.1 * (i + 1), Done::kCompleted, 1000 + i);
      a.t_device_done_ns = a.t_enter_ns + (r + i + 1) * kMs;
    }
    job.Coll(r, world, OpType::kBroadcast, 0.7, Done::kCompleted, 4096, kFloat16, 0);
    if (r < 2) job.Coll(r, tp, OpType::kReduceScatter, 0.8, Done::kCompleted, 64);
  }
  const trace::TraceSet set = job.Build();
  const CostTable t = Table(set);

  FakeProbe probe;
  exporters::AggregatorOptions o;
  o.probe = &probe;
  o.version = "test";
  SnapshotSource metrics_source;
  metrics_source.set = set;
  exporters::NodeAggregator aggregator(&metrics_source, o);
  const std::string text = Scrape(aggregator);

  struct Want {
    std::string comm;
    const char* op;
  };
  for (const Want& w :
       {Want{"world", "allreduce"}, Want{"world", "broadcast"}, Want{"tp", "reducescatter"}}) {
    uint64_t calls = 0, bytes = 0;
    double seconds = 0;
    for (const CostRow& r : t.rows) {
      if (r.comm_name != w.comm || std::string(trace::OpTypeName(r.op)) != w.op) continue;
      calls += r.calls;
      bytes += r.bytes;
      seconds += r.mean_s * static_cast<double>(r.calls);
    }
    const std::string labels = "{comm=\"" + w.comm + "\",op=\"" + w.op + "\"}";
    SCOPED_TRACE(labels);
    EXPECT_EQ(Value(text, "ncclscope_operation_duration_seconds_count" + labels),
              static_cast<double>(calls));
    EXPECT_NEAR(Value(text, "ncclscope_operation_duration_seconds_sum" + labels).value_or(-1),
                seconds, 1e-9);
    double exported_bytes = 0;
    for (int rank = 0; rank < 3; ++rank) {
      exported_bytes +=
          Value(text, "ncclscope_operation_bytes_total{rank=\"" + std::to_string(rank) +
                          "\",comm=\"" + w.comm + "\",op=\"" + w.op + "\"}")
              .value_or(0);
    }
    EXPECT_EQ(exported_bytes, static_cast<double>(bytes));
  }
}

TEST_F(CostTableTest, AnEmptyDirectoryHasNoRows) {
  const CostTable t = Table(trace::TraceSet{});
  EXPECT_EQ(t.files, 0u);
  EXPECT_TRUE(t.rows.empty());
  EXPECT_TRUE(t.ranks.empty());
}

}  // namespace
}  // namespace ncclscope::testing
