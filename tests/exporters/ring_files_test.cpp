// The exporter on real ring files written by trace::RingWriter, as the probe writes them: files
// that appear later, broken files next to good ones, a ring that wraps between scrapes, a writer
// that runs while scrapes read, and the GPU UUID of the header.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "exporters/prometheus/node_aggregator.h"
#include "exporters/sources/file_tail.h"
#include "exporters/sources/ring_source.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/exporters/scrape_text.h"
#include "tests/trace/slot_commit.h"
#include "trace/clock.h"
#include "trace/ring_writer.h"

namespace ncclscope::testing {
namespace {

constexpr uint64_t kWorld = 0x1234;

std::unique_ptr<trace::RingWriter> Writer(const std::string& dir, int rank, uint64_t capacity,
                                          const std::string& job = "job-7") {
  trace::RingOptions o;
  o.dir = dir;
  o.record_capacity = capacity;
  o.global_rank = rank;
  o.world_size = 2;
  o.job_id = job;
  std::string error;
  auto w = trace::RingWriter::Create(o, &error);
  EXPECT_NE(w, nullptr) << error;
  if (w == nullptr) return w;
  trace::CommInfo c;
  c.id = kWorld;
  c.rank = rank;
  c.nranks = 2;
  c.name = "world";
  w->AddComm(c);
  return w;
}

// One completed allreduce of 256 float32.
void AllReduce(trace::RingWriter& w, uint64_t seq) {
  trace::RecordData r{};
  r.comm_id = kWorld;
  r.seq = seq;
  r.op = static_cast<uint32_t>(trace::OpType::kAllReduce);
  r.count = 256;
  r.dtype = 7;
  r.redop = 0;
  r.peer = -1;
  r.t_enter_ns = 1000;
  r.t_exit_ns = 2000;
  const uint64_t slot = w.Append(r, true);
  w.CompleteDevice(slot, 5000);
}

std::string Ops(int rank) {
  return "ncclscope_operations_total{rank=\"" + std::to_string(rank) +
         "\",comm=\"world\",op=\"allreduce\"}";
}

class RingFiles : public ::testing::Test {
 protected:
  ScratchDir scratch;
  std::string dir = scratch / "trace";
  exporters::DirRingSource source{dir};
  exporters::NodeAggregator aggregator{&source, {}};
};

TEST_F(RingFiles, FilesThatAppearLaterAreRead) {
  auto w0 = Writer(dir, 0, 1024);
  AllReduce(*w0, 1);
  std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, "ncclscope_exporter_ring_files"), 1);
  auto w1 = Writer(dir, 1, 1024);
  AllReduce(*w1, 1);
  AllReduce(*w0, 2);
  text = Scrape(aggregator);
  EXPECT_EQ(Value(text, "ncclscope_exporter_ring_files"), 2);
  EXPECT_EQ(Value(text, Ops(0)), 2);
  EXPECT_EQ(Value(text, Ops(1)), 1);
}

TEST_F(RingFiles, BrokenFilesAreCountedAndTheOthersStillRead) {
  auto w0 = Writer(dir, 0, 1024);
  AllReduce(*w0, 1);
  std::ofstream(dir + "/junk.ring") << std::string(8192, 'x');
  std::ofstream(dir + "/short.ring") << "NCSCOPER";
  std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, "ncclscope_exporter_read_errors_total"), 2);
  EXPECT_EQ(Value(text, "ncclscope_exporter_ring_files"), 1);
  EXPECT_EQ(Value(text, Ops(0)), 1);
  text = Scrape(aggregator);  // counted at every scrape they fail
  EXPECT_EQ(Value(text, "ncclscope_exporter_read_errors_total"), 4);
}

TEST_F(RingFiles, AFileReplacedUnderItsNameIsReadAsTheNewFile) {
  // The source keeps files mapped between scrapes: a new file behind the same name (another
  // inode) must be mapped afresh, a removed one must disappear.
  auto w0 = Writer(dir, 0, 1024);
  AllReduce(*w0, 1);
  auto w1 = Writer(dir, 1, 1024);
  for (uint64_t seq = 1; seq <= 3; ++seq) AllReduce(*w1, seq);
  std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, Ops(0)), 1);
  EXPECT_EQ(Value(text, Ops(1)), 3);
  ASSERT_EQ(std::rename(w1->path().c_str(), w0->path().c_str()), 0);
  text = Scrape(aggregator);
  EXPECT_EQ(Value(text, "ncclscope_exporter_ring_files"), 1);
  EXPECT_EQ(Value(text, Ops(0)), std::nullopt);
  EXPECT_EQ(Value(text, Ops(1)), 3);
  AllReduce(*w1, 4);  // the writer keeps writing the renamed file
  text = Scrape(aggregator);
  EXPECT_EQ(Value(text, Ops(1)), 4);
  ASSERT_EQ(std::remove(w0->path().c_str()), 0);
  text = Scrape(aggregator);
  EXPECT_EQ(Value(text, "ncclscope_exporter_ring_files"), 0);
  EXPECT_EQ(Value(text, Ops(1)), std::nullopt);
}

TEST_F(RingFiles, WithAHostOnlyThatHostsFilesAreServed) {
  auto w = Writer(dir, 0, 64);
  AllReduce(*w, 1);
  exporters::DirRingSource mine(dir, w->header().host);
  exporters::DirRingSource elsewhere(dir, "another-node");
  exporters::NodeAggregator here(&mine, {});
  exporters::NodeAggregator there(&elsewhere, {});
  EXPECT_EQ(Value(Scrape(here), Ops(0)), 1);
  EXPECT_EQ(Value(Scrape(there), "ncclscope_exporter_ring_files"), 0);
}

TEST_F(RingFiles, AMissingDirectoryIsNoFilesNotACrash) {
  exporters::DirRingSource nowhere(scratch / "does-not-exist");
  exporters::NodeAggregator empty(&nowhere, {});
  EXPECT_EQ(Value(Scrape(empty), "ncclscope_exporter_ring_files"), 0);
}

TEST_F(RingFiles, ARingThatWrapsBetweenScrapesCountsWhatWasOverwrittenUnread) {
  auto w = Writer(dir, 0, 64);
  for (uint64_t s = 1; s <= 10; ++s) AllReduce(*w, s);
  EXPECT_EQ(Value(Scrape(aggregator), Ops(0)), 10);
  for (uint64_t s = 11; s <= 210; ++s) AllReduce(*w, s);
  const std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, Ops(0)), 10 + 64) << "the ring holds the newest 64";
  EXPECT_EQ(Value(text, R"(ncclscope_exporter_records_missed_total{reason="overwritten"})"),
            210 - 64 - 10);
  EXPECT_EQ(Value(text, R"(ncclscope_records_lost_total{rank="0",reason="overwritten"})"),
            210 - 64);
  EXPECT_EQ(Value(text, R"(ncclscope_last_issued_sequence{rank="0",comm="world"})"), 210);
}

TEST_F(RingFiles, ScrapesWhileTheWriterRunsCountEveryRecordExactlyOnce) {
  constexpr uint64_t kRecords = 20000;
  auto w = Writer(dir, 0, 1 << 15);
  std::thread writer([&] {
    for (uint64_t s = 1; s <= kRecords; ++s) AllReduce(*w, s);
  });
  for (int i = 0; i < 50; ++i) Scrape(aggregator, nullptr, trace::MonotonicNs());
  writer.join();
  const std::string text = Scrape(aggregator);
  EXPECT_EQ(Value(text, Ops(0)), kRecords);
  EXPECT_EQ(
      Value(text, R"(ncclscope_operation_duration_seconds_count{comm="world",op="allreduce"})"),
      kRecords);
  EXPECT_EQ(Value(text, R"(ncclscope_inflight_operations{rank="0",comm="world"})"), 0);
}

TEST_F(RingFiles, ARecordDroppedByALappingWriterIsCountedOnceAsDroppedNeverAsTorn) {
  auto w = Writer(dir, 0, 64);
  for (uint64_t s = 1; s <= 64; ++s) AllReduce(*w, s);
  EXPECT_EQ(Value(Scrape(aggregator), Ops(0)), 64);
  // The writer of index 0 is staged as preempted mid-record while the ring goes round once more:
  // the writer of index 64 finds slot 0 still owned and drops its record.
  SlotCommit slot0(*w, 0);
  slot0.OwnedBy(0);
  for (uint64_t s = 65; s <= 128; ++s) AllReduce(*w, s);
  slot0.CommittedBy(0);
  std::string text;
  for (int scrape = 0; scrape < 2 * exporters::FileTail::kTornRetries; ++scrape) {
    text = Scrape(aggregator, nullptr, exporters::FileTail::kTornPatienceNs * (scrape + 1));
  }
  EXPECT_EQ(Value(text, Ops(0)), 64 + 63);
  EXPECT_EQ(Value(text, R"(ncclscope_records_lost_total{rank="0",reason="dropped"})"), 1);
  EXPECT_EQ(Value(text, R"(ncclscope_exporter_records_missed_total{reason="torn"})"), 0);
}

TEST_F(RingFiles, RankInfoCarriesTheGpuUuidOfTheHeader) {
  auto w = Writer(dir, 0, 64);
  w->SetGpuUuid("GPU-6e637369-6d00-0000-0000-000000000003");
  w->SetGpuUuid("GPU-second-call-is-ignored");
  const std::string text = Scrape(aggregator);
  const std::string info = "ncclscope_rank_info{rank=\"0\",world_size=\"2\",Hostname=\"" +
                           std::string(w->header().host) +
                           "\",UUID=\"GPU-6e637369-6d00-0000-0000-000000000003\",job_id=\"job-7\"}";
  EXPECT_EQ(Value(text, info), 1) << text;
}

// A directory reused by a second job: the exporter serves the job that runs now (the newest
// heartbeat) or the one asked for, never both as one job, and says once what it leaves out.
TEST_F(RingFiles, OnlyOneJobsFilesAreServedAndTheOthersAreSaidOnce) {
  auto old0 = Writer(dir, 0, 1024, "job-6");
  auto old1 = Writer(dir, 1, 1024, "job-6");
  auto now0 = Writer(dir, 0, 1024, "job-7");
  AllReduce(*old0, 1);
  AllReduce(*now0, 1);
  AllReduce(*now0, 2);
  // job-6 stopped beating long ago; job-7 beats now.
  old0->Heartbeat(trace::MonotonicNs() - 60'000'000'000);
  old1->Heartbeat(trace::MonotonicNs() - 60'000'000'000);
  now0->Heartbeat(trace::MonotonicNs());

  ::testing::internal::CaptureStderr();
  std::string text = Scrape(aggregator);
  Scrape(aggregator);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(Value(text, "ncclscope_exporter_ring_files"), 1) << text;
  EXPECT_EQ(Value(text, Ops(0)), 2) << "job-6's rank 0 mixed in: " << text;
  EXPECT_EQ(said, "ncclscope exporter: " + dir +
                      ": ignored 2 ring file(s) of job job-6 (kept job job-7, the newest "
                      "heartbeat)\n");

  exporters::DirRingSource asked(dir, "", "job-6");
  std::string error;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(asked.List(&error).size(), 2u);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("kept job job-6, as asked"),
            std::string::npos);
}

}  // namespace
}  // namespace ncclscope::testing
