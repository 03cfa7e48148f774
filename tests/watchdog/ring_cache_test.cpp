// The watchdog's reader across the looks of one incident: a look after nothing moved but
// heartbeats re-reads no file and gives the same verdict as a fresh read; a completion stamped
// after the fact, a new record (the ring wraps), a file replaced by a restarted process, a file
// gone or another job's file are each seen at the next look, by re-reading that file only.
#include "plugin/watchdog/ring_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "hang_detector/decision/correlator.h"
#include "hang_detector/verdicts/verdict_json.h"
#include "tests/watchdog/hung_rings.h"
#include "trace/clock.h"

namespace ncclscope::plugin {
namespace {

namespace hd = hang_detector;
using testing::HungJob;
using testing::HungJobOptions;

struct RingCacheDir {
  RingCacheDir() {
    char tmpl[] = "/tmp/ncclscope-ring-cache-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~RingCacheDir() { std::filesystem::remove_all(path); }
  std::string path;
};

hd::Analysis AnalyzeAt(const hd::JobIndex& index, int64_t now_wall_ns) {
  hd::AnalyzeOptions o;
  o.now_wall_ns = now_wall_ns;
  o.stale_s = 600;  // the writers are this test: no heartbeat thread
  return hd::Analyze(index, o);
}

class RingCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HungJobOptions o;
    o.capacity = 4096;
    std::string error;
    ASSERT_TRUE(testing::WriteHungJob(dir_.path, o, &job_, &error)) << error;
  }
  hd::JobIndex Look(std::vector<std::string>* notes = nullptr) {
    std::vector<std::string> ignored;
    std::string error;
    auto index = cache_.Index(dir_.path, "bench", notes != nullptr ? notes : &ignored, &error);
    EXPECT_TRUE(index.has_value()) << error;
    return std::move(*index);
  }
  const hd::RankFile& FileOf(const hd::JobIndex& index, int rank) {
    for (const hd::RankFile& f : index.files()) {
      if (f.rank == rank) return f;
    }
    ADD_FAILURE() << "no file of rank " << rank;
    return index.files().front();
  }
  void Beat() {
    for (auto& w : job_.writers) w->Heartbeat(trace::MonotonicNs());
  }

  RingCacheDir dir_;
  HungJob job_;
  RingCache cache_;
};

TEST_F(RingCacheTest, ALookAfterOnlyHeartbeatsRereadsNothing) {
  const hd::JobIndex first = Look();
  EXPECT_EQ(cache_.last().files_read, 8u);
  EXPECT_EQ(first.files().size(), 8u);
  Beat();
  const hd::JobIndex second = Look();
  EXPECT_EQ(cache_.last().files_read, 0u);
  EXPECT_EQ(cache_.last().files_reused, 8u);
  // The new heartbeat is seen, the records are the same, and so is the verdict a fresh read gets.
  EXPECT_GT(FileOf(second, 0).heartbeat_wall, FileOf(first, 0).heartbeat_wall);
  std::string error;
  hd::IngestOptions io;
  io.job = "bench";
  const auto fresh = hd::JobIndex::FromDir(dir_.path, io, &error);
  ASSERT_TRUE(fresh.has_value()) << error;
  const int64_t now = trace::RealtimeNs();
  const hd::Analysis a = AnalyzeAt(second, now);
  ASSERT_FALSE(a.verdicts.empty());
  EXPECT_EQ(a.verdicts[0].cls, hd::VerdictClass::kMissing);
  EXPECT_EQ(a.verdicts[0].culprits, std::vector<int>{2});
  EXPECT_EQ(hd::RenderJson(a), hd::RenderJson(AnalyzeAt(*fresh, now)));
}

TEST_F(RingCacheTest, ACompletionStampedLateIsSeen) {
  Look();
  // Rank 0's stuck allreduce completes after the first look: its record changes, not its index.
  ASSERT_TRUE(job_.writers[0]->CompleteDevice(job_.stuck_slots[0], trace::MonotonicNs()));
  const hd::JobIndex index = Look();
  EXPECT_EQ(cache_.last().files_read, 1u);
  EXPECT_GT(FileOf(index, 0).ops.back().t_device_done_ns, 0);
  EXPECT_TRUE(trace::IsPending(FileOf(index, 1).ops.back().t_device_done_ns));
}

TEST_F(RingCacheTest, ANewRecordRereadsItsFileOnly) {
  const hd::JobIndex first = Look();
  const uint64_t oldest = FileOf(first, 5).IndexOf(0);
  testing::AppendCompleted(&job_, 5);  // the ring is full: this overwrites its oldest record
  const hd::JobIndex index = Look();
  EXPECT_EQ(cache_.last().files_read, 1u);
  EXPECT_EQ(cache_.last().files_reused, 7u);
  const hd::RankFile& f = FileOf(index, 5);
  EXPECT_EQ(f.IndexOf(0), oldest + 1);
  EXPECT_EQ(f.ops.back().seq, uint64_t{1} << 30);
}

TEST_F(RingCacheTest, AReplacedFileIsReadAgain) {
  Look();
  // A restarted rank 3 whose new file took the old one's name.
  const std::string old_path = job_.writers[3]->path();
  trace::RingOptions ro;
  ro.dir = dir_.path;
  ro.record_capacity = 64;
  ro.global_rank = 3;
  ro.world_size = 8;
  ro.job_id = "bench";
  ro.host = "node0";
  std::string error;
  auto restarted = trace::RingWriter::Create(ro, &error);
  ASSERT_NE(restarted, nullptr) << error;
  ASSERT_EQ(std::rename(restarted->path().c_str(), old_path.c_str()), 0);
  const hd::JobIndex index = Look();
  EXPECT_EQ(cache_.last().files_read, 1u);
  EXPECT_EQ(FileOf(index, 3).size(), 0u);
  EXPECT_EQ(FileOf(index, 3).snap->record_capacity, 64u);
}

TEST_F(RingCacheTest, FilesGoneAndOtherJobsAreLeftOut) {
  Look();
  ASSERT_EQ(unlink(job_.writers[7]->path().c_str()), 0);
  trace::RingOptions ro;
  ro.dir = dir_.path;
  ro.record_capacity = 64;
  ro.global_rank = 0;
  ro.world_size = 2;
  ro.job_id = "other";
  ro.host = "node0";
  std::string error;
  auto other = trace::RingWriter::Create(ro, &error);
  ASSERT_NE(other, nullptr) << error;
  std::vector<std::string> notes;
  const hd::JobIndex index = Look(&notes);
  EXPECT_EQ(index.files().size(), 7u);
  EXPECT_EQ(cache_.last().files_read, 1u);  // the other job's header
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("ignored 1 ring file(s) of job other"), std::string::npos) << notes[0];
  cache_.Clear();
  Look();
  EXPECT_EQ(cache_.last().files_read, 8u);
}

}  // namespace
}  // namespace ncclscope::plugin
