// The exporter's numbers on synthetic jobs whose every record the test states: counts, bytes and
// histograms exact; a scrape reads only what is new, yet picks up late device completions, wraps
// and slots that were mid-write; a dead rank stays visible; the comm label stays bounded.
#include <gtest/gtest.h>

#include <string>

#include "exporters/prometheus/node_aggregator.h"
#include "exporters/prometheus/verdict_stages.h"
#include "exporters/sources/file_tail.h"
#include "hang_detector/decision/correlator.h"
#include "tests/exporters/scrape_text.h"
#include "tests/exporters/snapshot_source.h"
#include "tests/hang_detector/job_builder.h"

namespace ncclscope::testing {
namespace {

using exporters::AggregatorOptions;
using exporters::NodeAggregator;
using trace::OpType;

AggregatorOptions Options(const FakeProbe* probe) {
  AggregatorOptions o;
  o.probe = probe;
  o.version = "test";
  return o;
}

std::string Ops(int rank, const std::string& comm, const std::string& op) {
  return "ncclscope_operations_total{rank=\"" + std::to_string(rank) + "\",comm=\"" + comm +
         "\",op=\"" + op + "\"}";
}

class Aggregation : public ::testing::Test {
 protected:
  FakeProbe probe;
  SnapshotSource source;
  NodeAggregator aggregator{&source, Options(&probe)};
};

TEST_F(Aggregation, CountsBytesAndHistogramsAreExact) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 3; ++i) job.Coll(r, world, OpType::kAllReduce, i * 0.01, Done::kCompleted);
    job.Coll(r, world, OpType::kAllGather, 0.05, Done::kCompleted, 100);
    job.Send(r, world, 1 - r, 0.06, Done::kCompleted);
  }
  source.set = job.Build();
  const std::string text = Scrape(aggregator);

  EXPECT_EQ(Value(text, Ops(0, "world", "allreduce")), 3);
  EXPECT_EQ(Value(text, Ops(1, "world", "allgather")), 1);
  EXPECT_EQ(Value(text, Ops(1, "world", "send")), 1);
  // 256 float32 = 1 KiB per allreduce; an allgather of 100 float32 on 2 ranks receives 800 bytes.
  EXPECT_EQ(Value(text, R"(ncclscope_operation_bytes_total{rank="0",comm="world",op="allreduce"})"),
            3072);
  EXPECT_EQ(Value(text, R"(ncclscope_operation_bytes_total{rank="0",comm="world",op="allgather"})"),
            800);
  EXPECT_EQ(Value(text, R"(ncclscope_operation_bytes_total{rank="1",comm="world",op="send"})"),
            512);
  // Histograms carry no rank: both ranks' operations land in one series per (comm, op).
  const std::string size = R"(ncclscope_operation_size_bytes_bucket{comm="world",op="allreduce",)";
  EXPECT_EQ(Value(text, size + R"(le="1024"})"), 6);
  EXPECT_EQ(Value(text, size + R"(le="+Inf"})"), 6);
  EXPECT_EQ(Value(text, R"(ncclscope_operation_size_bytes_sum{comm="world",op="allgather"})"),
            1600);
  // Every completion in the builder lands 1 ms after entry: above 0.64 ms, within 2.56 ms.
  const std::string duration =
      R"(ncclscope_operation_duration_seconds_bucket{comm="world",op="allreduce",)";
  // prometheus-cpp prints bounds with 16 digits: 6.4e-4 is not exact in binary.
  EXPECT_EQ(Value(text, duration + R"(le="0.0006400000000000001"})"), 0);
  EXPECT_EQ(Value(text, duration + R"(le="0.00256"})"), 6);
  EXPECT_NEAR(
      *Value(text, R"(ncclscope_operation_duration_seconds_sum{comm="world",op="allreduce"})"),
      0.006, 1e-9);
  EXPECT_EQ(Value(text, R"(ncclscope_communicator_ranks{comm="world"})"), 2);
  EXPECT_EQ(Value(text, R"(ncclscope_last_issued_sequence{rank="0",comm="world"})"), 4);
  EXPECT_EQ(Value(text, R"(ncclscope_last_completed_sequence{rank="0",comm="world"})"), 4);
  EXPECT_EQ(Value(text, "ncclscope_exporter_ring_files"), 2);
  EXPECT_EQ(Value(text, R"(ncclscope_build_info{version="test"})"), 1);
}

TEST_F(Aggregation, LatencyBySizeCountsEachCompletionInItsSizeClass) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  for (int r = 0; r < 2; ++r) {
    // float32: 4 bytes an element. On the bound, a class includes it: 64 KiB is "<=64KiB".
    job.Coll(r, world, OpType::kAllReduce, 0.00, Done::kCompleted, uint64_t{16} * 1024);
    job.Coll(r, world, OpType::kAllReduce, 0.01, Done::kCompleted, uint64_t{16} * 1024 + 1);
    job.Coll(r, world, OpType::kAllReduce, 0.02, Done::kCompleted, 4 * kMiB);
    job.Coll(r, world, OpType::kAllReduce, 0.03, Done::kCompleted, 4 * kMiB);
    job.Coll(r, world, OpType::kAllReduce, 0.04, Done::kPending, 16);  // no duration yet
    // An allgather receives count x 4 x 2 ranks: 256 MiB exactly, then just above.
    job.Coll(r, world, OpType::kAllGather, 0.05, Done::kCompleted, 32 * kMiB);
    job.Coll(r, world, OpType::kAllGather, 0.06, Done::kCompleted, 32 * kMiB + 1);
  }
  source.set = job.Build();
  const std::string text = Scrape(aggregator);

  auto count = [&](const std::string& op, const std::string& size) {
    return Value(text, "ncclscope_operation_duration_by_size_seconds_count{comm=\"world\",op=\"" +
                           op + "\",size=\"" + size + "\"}");
  };
  EXPECT_EQ(count("allreduce", "<=64KiB"), 2);
  EXPECT_EQ(count("allreduce", "<=1MiB"), 2);
  EXPECT_EQ(count("allreduce", "<=16MiB"), 4);
  EXPECT_EQ(count("allgather", "<=256MiB"), 2);
  EXPECT_EQ(count("allgather", ">256MiB"), 2);
  // Only the classes an operation was seen in have series.
  EXPECT_EQ(count("allreduce", "<=256MiB"), std::nullopt);
  EXPECT_EQ(count("allgather", "<=64KiB"), std::nullopt);
  // Every completion in the builder lands 1 ms after entry: above 0.64 ms, within 2.56 ms, the
  // same `le` strings as the main duration histogram.
  const std::string bucket =
      R"(ncclscope_operation_duration_by_size_seconds_bucket{comm="world",op="allreduce",size="<=16MiB",)";
  EXPECT_EQ(Value(text, bucket + R"(le="4e-05"})"), 0);
  EXPECT_EQ(Value(text, bucket + R"(le="0.0006400000000000001"})"), 0);
  EXPECT_EQ(Value(text, bucket + R"(le="0.00256"})"), 4);
  EXPECT_EQ(Value(text, bucket + R"(le="2.62144"})"), 4);
  EXPECT_EQ(Value(text, bucket + R"(le="+Inf"})"), 4);
  EXPECT_EQ(Value(text, bucket + R"(le="10.48576"})"), std::nullopt);  // not a bound here
  EXPECT_NEAR(*Value(text, R"(ncclscope_operation_duration_by_size_seconds_sum{comm="world",)"
                           R"(op="allreduce",size="<=16MiB"})"),
              0.004, 1e-9);
  // The classes add up to the main histogram: completed operations only.
  EXPECT_EQ(
      Sum(text, "ncclscope_operation_duration_by_size_seconds_count", {{"op", "allreduce"}}),
      *Value(text, R"(ncclscope_operation_duration_seconds_count{comm="world",op="allreduce"})"));
}

TEST_F(Aggregation, ScrapesCountEachOperationOnceAndPickUpLateCompletions) {
  JobBuilder job(1);
  const uint64_t world = job.Comm("world", {0});
  job.Coll(0, world, OpType::kAllReduce, 0.0, Done::kCompleted);
  job.Coll(0, world, OpType::kAllReduce, 0.1, Done::kPending);
  source.set = job.Build();
  std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, Ops(0, "world", "allreduce")), 2);
  EXPECT_EQ(Value(text, R"(ncclscope_inflight_operations{rank="0",comm="world"})"), 1);
  EXPECT_EQ(Value(text, R"(ncclscope_last_completed_sequence{rank="0",comm="world"})"), 1);

  // The writer stamps the completion into the record later; nothing new was issued.
  trace::RecordData& pending = source.set.files[0].records[1].data;
  const int64_t done_ns = pending.t_enter_ns + 2000000;
  pending.t_device_done_ns = done_ns;
  text = Scrape(aggregator);
  EXPECT_EQ(Value(text, Ops(0, "world", "allreduce")), 2) << "re-reading must not count again";
  EXPECT_EQ(Value(text, R"(ncclscope_inflight_operations{rank="0",comm="world"})"), 0);
  EXPECT_EQ(Value(text, R"(ncclscope_last_completed_sequence{rank="0",comm="world"})"), 2);
  EXPECT_EQ(
      Value(text, R"(ncclscope_operation_duration_seconds_count{comm="world",op="allreduce"})"), 2);

  job.Coll(0, world, OpType::kAllReduce, 0.2, Done::kCompleted);
  job.Coll(0, world, OpType::kAllReduce, 0.3, Done::kCompleted);
  source.set = job.Build();
  source.set.files[0].records[1].data.t_device_done_ns = done_ns;  // the writer's stamp stays
  text = Scrape(aggregator);
  EXPECT_EQ(Value(text, Ops(0, "world", "allreduce")), 4);
  EXPECT_EQ(
      Value(text, R"(ncclscope_operation_duration_seconds_count{comm="world",op="allreduce"})"), 4);
}

TEST_F(Aggregation, AnUntrackedCompletionLeavesTheInflightCount) {
  JobBuilder job(1);
  const uint64_t world = job.Comm("world", {0});
  job.Coll(0, world, OpType::kAllReduce, 0.0, Done::kPending);
  source.set = job.Build();
  EXPECT_EQ(Value(Scrape(aggregator), R"(ncclscope_inflight_operations{rank="0",comm="world"})"),
            1);
  source.set.files[0].records[0].data.t_device_done_ns = trace::kDoneUntracked;
  const std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, R"(ncclscope_inflight_operations{rank="0",comm="world"})"), 0);
  EXPECT_EQ(
      Value(text, R"(ncclscope_operation_duration_seconds_count{comm="world",op="allreduce"})"),
      std::nullopt);
}

TEST_F(Aggregation, WrapCountsWhatTheExporterNeverSaw) {
  JobBuilder job(1);
  const uint64_t world = job.Comm("world", {0});
  for (int i = 0; i < 10; ++i) job.Coll(0, world, OpType::kAllReduce, i * 0.01, Done::kCompleted);
  source.set = job.Build();
  EXPECT_EQ(Value(Scrape(aggregator), Ops(0, "world", "allreduce")), 10);

  // 20 more records, of which the ring kept the newest 5: 15 were overwritten unread.
  for (int i = 10; i < 30; ++i) job.Coll(0, world, OpType::kAllReduce, i * 0.01, Done::kCompleted);
  job.Wrap(0, 5);
  source.set = job.Build();
  const std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, Ops(0, "world", "allreduce")), 15);
  EXPECT_EQ(Value(text, R"(ncclscope_exporter_records_missed_total{reason="overwritten"})"), 15);
  EXPECT_EQ(Value(text, R"(ncclscope_records_lost_total{rank="0",reason="overwritten"})"), 25);
  EXPECT_EQ(Value(text, R"(ncclscope_last_issued_sequence{rank="0",comm="world"})"), 30);
}

TEST_F(Aggregation, ASlotMidWriteIsReadAtTheNextScrape) {
  JobBuilder job(1);
  const uint64_t world = job.Comm("world", {0});
  for (int i = 0; i < 4; ++i) job.Coll(0, world, OpType::kAllReduce, i * 0.01, Done::kCompleted);
  source.set = job.Build();
  const trace::StoredRecord torn = source.set.files[0].records[2];
  source.set.files[0].records.erase(source.set.files[0].records.begin() + 2);
  EXPECT_EQ(Value(Scrape(aggregator), Ops(0, "world", "allreduce")), 3);
  source.set = job.Build();  // the writer finished the slot
  const std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, Ops(0, "world", "allreduce")), 4);
  EXPECT_EQ(Value(text, R"(ncclscope_exporter_records_missed_total{reason="torn"})"), 0);
  EXPECT_EQ(torn.index, 2u);
}

TEST_F(Aggregation, ASlotThatStaysTornIsGivenUpAndCounted) {
  JobBuilder job(1);
  const uint64_t world = job.Comm("world", {0});
  for (int i = 0; i < 4; ++i) job.Coll(0, world, OpType::kAllReduce, i * 0.01, Done::kCompleted);
  source.set = job.Build();
  source.set.files[0].records.erase(source.set.files[0].records.begin() + 1);
  // Quick polls do not give it up: its writer may only be descheduled mid-record.
  std::string text;
  for (int scrape = 0; scrape < 2 * exporters::FileTail::kTornRetries; ++scrape) {
    text = Scrape(aggregator, nullptr, int64_t{scrape} * 1000);
  }
  EXPECT_EQ(Value(text, R"(ncclscope_exporter_records_missed_total{reason="torn"})"), 0);
  // Still unreadable a second later: its writer died mid-record.
  text = Scrape(aggregator, nullptr, exporters::FileTail::kTornPatienceNs + 1000000);
  EXPECT_EQ(Value(text, Ops(0, "world", "allreduce")), 3);
  EXPECT_EQ(Value(text, R"(ncclscope_exporter_records_missed_total{reason="torn"})"), 1);
}

TEST_F(Aggregation, ADeadRankStaysVisibleUntilItsFileIsRemoved) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  job.Coll(0, world, OpType::kAllReduce, 0.0, Done::kCompleted);
  job.Coll(1, world, OpType::kAllReduce, 0.0, Done::kCompleted);
  job.Coll(0, world, OpType::kAllReduce, 0.1, Done::kPending);
  source.set = job.Build();
  probe.states[JobBuilder::Pid(1)] = hang_detector::ProcessState::kGone;
  std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, R"(ncclscope_rank_up{rank="0"})"), 1);
  EXPECT_EQ(Value(text, R"(ncclscope_rank_up{rank="1"})"), 0);
  EXPECT_EQ(Value(text, Ops(1, "world", "allreduce")), 1) << "the dead rank's counts stay";
  EXPECT_GT(*Value(text, R"(ncclscope_last_progress_timestamp_seconds{rank="1"})"), 1.7e9);

  job.Finished(0);  // a clean exit reads as down too
  source.set = job.Build();
  EXPECT_EQ(Value(Scrape(aggregator), R"(ncclscope_rank_up{rank="0"})"), 0);

  job.RemoveFile(1);
  source.set = job.Build();
  text = Scrape(aggregator);
  EXPECT_EQ(Value(text, R"(ncclscope_rank_up{rank="1"})"), std::nullopt);
  EXPECT_EQ(Value(text, "ncclscope_exporter_ring_files"), 1);
}

TEST_F(Aggregation, CommunicatorNamesBeyondTheCapReadOther) {
  const int comms = static_cast<int>(exporters::kMaxCommLabels) + 4;
  JobBuilder job(1);
  for (int c = 0; c < comms; ++c) {
    const uint64_t id = job.Comm("layer" + std::to_string(c), {0});
    job.Coll(0, id, OpType::kAllReduce, c * 0.01, Done::kCompleted);
  }
  source.set = job.Build();
  const std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, Ops(0, "layer0", "allreduce")), 1);
  EXPECT_EQ(Value(text, Ops(0, "layer15", "allreduce")), 1);
  EXPECT_EQ(Value(text, Ops(0, "layer16", "allreduce")), std::nullopt);
  EXPECT_EQ(Value(text, Ops(0, "other", "allreduce")), 4);
  EXPECT_EQ(Sum(text, "ncclscope_operations_total"), comms);
}

TEST_F(Aggregation, LabelValuesAreEscaped) {
  JobBuilder job(1);
  const uint64_t odd = job.Comm("a\"b\\c\nd", {0});
  job.Coll(0, odd, OpType::kAllReduce, 0.0, Done::kCompleted);
  source.set = job.Build();
  const std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, R"(ncclscope_operations_total{rank="0",comm="a\"b\\c\nd",op="allreduce"})"),
            1)
      << text;
}

TEST_F(Aggregation, TheLastRankToArriveIsLateByWhatTheOthersWaited) {
  JobBuilder job(3);
  const uint64_t world = job.Comm("world", {0, 1, 2});
  // Ranks 0 and 1 enter at t, rank 2 five ms later; the collective completes on all at t + 6 ms.
  for (int i = 0; i < 10; ++i) {
    const double t = i * 0.1;
    for (int r = 0; r < 3; ++r) {
      trace::RecordData& rec =
          job.Coll(r, world, OpType::kAllReduce, r == 2 ? t + 0.005 : t, Done::kCompleted);
      rec.t_device_done_ns = JobBuilder::Wall(t + 0.006) - JobBuilder::Wall(0) + 1000000000000LL;
    }
  }
  source.set = job.Build();
  const std::string text = Scrape(aggregator);
  EXPECT_NEAR(*Value(text, R"(ncclscope_arrival_lateness_seconds{rank="2",comm="world"})"), 0.005,
              1e-6);
  EXPECT_EQ(Value(text, R"(ncclscope_arrival_lateness_seconds{rank="0",comm="world"})"), 0);
  // 5 ms late against a median collective duration of 6 ms.
  EXPECT_NEAR(*Value(text, R"(ncclscope_straggler_score{rank="2",comm="world"})"), 5.0 / 6.0, 1e-6);
  EXPECT_EQ(Value(text, R"(ncclscope_straggler_score{rank="1",comm="world"})"), 0);
}

TEST_F(Aggregation, VerdictsNameTheirCulprits) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  job.Coll(0, world, OpType::kAllReduce, 0.0, Done::kCompleted);
  job.Coll(1, world, OpType::kAllReduce, 0.0, Done::kCompleted);
  job.Coll(0, world, OpType::kAllReduce, 1.0, Done::kPending);  // rank 1 never calls #2
  job.HeartbeatAll(30.0);
  source.set = job.Build();
  hang_detector::AnalyzeOptions options;
  options.now_wall_ns = JobBuilder::Wall(30.0);
  options.probe = &probe;
  const hang_detector::Analysis analysis = hang_detector::Analyze(source.set, options);
  const std::string text = Scrape(aggregator, &analysis);
  ASSERT_FALSE(analysis.verdicts.empty());
  // The stage is the correlator's call (suspect or confirmed; verdict_stages_test.cpp pins both).
  const std::string stage = exporters::StageLabel(analysis.verdicts.front());
  EXPECT_EQ(Value(text, R"(ncclscope_verdict{class="missing",comm="world",rank="1",stage=")" +
                            stage + "\",scope=\"node\"}"),
            1)
      << text;
  EXPECT_NEAR(*Value(text, R"(ncclscope_verdict_age_seconds{class="missing",comm="world",stage=")" +
                               stage + "\",scope=\"node\"}"),
              29, 0.5);
}

TEST_F(Aggregation, AHealthyJobHasNoVerdictSeries) {
  JobBuilder job(2);
  const uint64_t world = job.Comm("world", {0, 1});
  job.Coll(0, world, OpType::kAllReduce, 0.0, Done::kCompleted);
  job.Coll(1, world, OpType::kAllReduce, 0.0, Done::kCompleted);
  source.set = job.Build();
  hang_detector::AnalyzeOptions options;
  options.now_wall_ns = JobBuilder::Wall(0.01);
  options.probe = &probe;
  const hang_detector::Analysis analysis = hang_detector::Analyze(source.set, options);
  EXPECT_EQ(Sum(Scrape(aggregator, &analysis), "ncclscope_verdict"), 0);
}

}  // namespace
}  // namespace ncclscope::testing
