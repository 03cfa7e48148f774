// The index of a directory holding two jobs' ring files (a reused NCCLSCOPE_DIR) keeps one job:
// the one asked for (TraceSet::job, analyze --job, the watchdog's own job) or else the newest
// heartbeat's, and notes what it left out. Mixed, the old job's exited ranks would be culprits.
#include <gtest/gtest.h>

#include <string>

#include "hang_detector/ingest/job_index.h"
#include "tests/hang_detector/job_builder.h"

namespace ncclscope::testing {
namespace {

// Two ranks that each did one allreduce at time t, of job `job`.
trace::TraceSet JobTraces(const std::string& job, double t) {
  JobBuilder b(2);
  const uint64_t world = b.Comm("world", {0, 1});
  for (int r = 0; r < 2; ++r) b.Coll(r, world, trace::OpType::kAllReduce, t, Done::kCompleted);
  b.HeartbeatAll(t);
  trace::TraceSet set = b.Build();
  for (trace::RingSnapshot& f : set.files) f.job_id = job;
  return set;
}

trace::TraceSet Both() {
  trace::TraceSet set = JobTraces("old", 1.0);
  trace::TraceSet now = JobTraces("new", 50.0);
  for (trace::RingSnapshot& f : now.files) set.files.push_back(std::move(f));
  return set;
}

TEST(TwoJobsIndex, TheNewestHeartbeatsJobIsIndexedAndTheOtherNoted) {
  const hang_detector::JobIndex index(Both());
  ASSERT_EQ(index.files().size(), 2u);
  for (const auto& f : index.files()) EXPECT_EQ(f.snap->job_id, "new");
  ASSERT_FALSE(index.notes().empty());
  EXPECT_EQ(index.notes().front(),
            "ignored 2 ring file(s) of job old (kept job new, the newest heartbeat)");
}

TEST(TwoJobsIndex, TheJobAskedForIsIndexed) {
  trace::TraceSet set = Both();
  set.job = "old";
  const hang_detector::JobIndex index(set);
  ASSERT_EQ(index.files().size(), 2u);
  for (const auto& f : index.files()) EXPECT_EQ(f.snap->job_id, "old");
  // Both of its ranks kept their records: nothing was lost in the filtering.
  for (const auto& f : index.files()) EXPECT_EQ(f.size(), 1u);
}

}  // namespace
}  // namespace ncclscope::testing
