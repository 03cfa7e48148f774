// Device stalls localized by the profiler plugin's device_start markers, over synthetic jobs: the
// rank whose device work for #N never started is the culprit; anything less than proof keeps the
// tie of today.
#include <gtest/gtest.h>

#include "tests/hang_detector/analyze_helpers.h"

namespace ncclscope::testing {
namespace {

struct Options {
  bool attach = true;                    // the profiler attached on every rank
  std::vector<int> started = {0, 2, 3};  // ranks whose #3 device work started
  bool marker_before_record = false;     // the start was seen before the record was written
};

// Four ranks, two completed allreduces on world (each with its start marker), then #3 issued by
// everyone and completed by nobody.
JobBuilder Stalled(const Options& o, uint64_t* world) {
  JobBuilder job(4);
  *world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    if (o.attach) job.ProfilerAttach(r, *world, 0.05);
    job.Coll(r, *world, OpType::kAllReduce, 0.1, Done::kCompleted);
    job.DeviceStart(r, *world, 1, 0.1);
    job.Coll(r, *world, OpType::kAllReduce, 0.2, Done::kCompleted);
    job.DeviceStart(r, *world, 2, 0.2);
    const bool started = std::find(o.started.begin(), o.started.end(), r) != o.started.end();
    if (started && o.marker_before_record) job.DeviceStart(r, *world, 3, 1.0);
    job.Coll(r, *world, OpType::kAllReduce, 1.0, Done::kPending);
    if (started && !o.marker_before_record) job.DeviceStart(r, *world, 3, 1.0);
  }
  job.HeartbeatAll(5);
  return job;
}

TEST(DeviceStall, RankWhoseDeviceNeverStartedIsTheCulprit) {
  uint64_t world;
  const Analysis a = AnalyzeWith(Stalled({}, &world), 5, ConfirmAtOnce());
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStall);
  EXPECT_EQ(v.comm_id, world);
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.op, "allreduce");
  EXPECT_FALSE(v.tie);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
  EXPECT_EQ(v.victims, (std::vector<int>{0, 2, 3}));
  EXPECT_TRUE(Mentions(v, 1));
  // A started rank's marker is cited as a record.
  EXPECT_TRUE(std::any_of(v.evidence.begin(), v.evidence.end(), [](const auto& e) {
    return e.has_record && e.rank == 0 && e.text.find("started") != std::string::npos;
  }));
  EXPECT_EQ(hang_detector::ExitCode(a), 2);
}

TEST(DeviceStall, EveryRankWithoutAStartIsNamed) {
  uint64_t world;
  Options o;
  o.started = {0, 3};
  const Analysis a = AnalyzeAt(Stalled(o, &world), 5);
  const Verdict& v = First(a);
  EXPECT_FALSE(v.tie);
  EXPECT_EQ(v.culprits, (std::vector<int>{1, 2}));
}

TEST(DeviceStall, StartSeenBeforeTheRecordCounts) {
  uint64_t world;
  Options o;
  o.marker_before_record = true;
  const Analysis a = AnalyzeAt(Stalled(o, &world), 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
}

TEST(DeviceStall, EarlierStartsProveTheProfilerWatchedWithoutAnAttachRecord) {
  uint64_t world;
  Options o;
  o.attach = false;  // wrapped out of the ring long ago
  const Analysis a = AnalyzeAt(Stalled(o, &world), 5);
  const Verdict& v = First(a);
  EXPECT_FALSE(v.tie);
  EXPECT_EQ(v.culprits, std::vector<int>{1});
}

TEST(DeviceStall, EveryDeviceStartedIsStillATie) {
  uint64_t world;
  Options o;
  o.started = {0, 1, 2, 3};  // all stuck inside the kernel: no odd one out
  const Analysis a = AnalyzeAt(Stalled(o, &world), 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStall);
  EXPECT_TRUE(v.tie);
  EXPECT_EQ(v.culprits, (std::vector<int>{0, 1, 2, 3}));
}

TEST(DeviceStall, RankTheProfilerNeverWatchedIsNotBlamed) {
  JobBuilder job(4);
  const uint64_t world = job.Comm("world", {0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    const bool watched = r != 1;  // rank 1 runs without the profiler plugin
    if (watched) job.ProfilerAttach(r, world, 0.05);
    job.Coll(r, world, OpType::kAllReduce, 0.1, Done::kCompleted);
    if (watched) job.DeviceStart(r, world, 1, 0.1);
    job.Coll(r, world, OpType::kAllReduce, 1.0, Done::kPending);
    if (watched) job.DeviceStart(r, world, 2, 1.0);
  }
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStall);
  EXPECT_TRUE(v.tie);
}

TEST(DeviceStall, AStartThatCouldNotBeNumberedKeepsTheTie) {
  uint64_t world;
  Options o;
  o.started = {0, 2, 3};
  JobBuilder job = Stalled(o, &world);
  job.DeviceStart(1, world, 0, 1.1);  // maybe #3's own start, seen without its number
  job.HeartbeatAll(5);
  const Analysis a = AnalyzeAt(job, 5);
  const Verdict& v = First(a);
  EXPECT_EQ(v.cls, VerdictClass::kDeviceStall);
  EXPECT_TRUE(v.tie);
}

}  // namespace
}  // namespace ncclscope::testing
