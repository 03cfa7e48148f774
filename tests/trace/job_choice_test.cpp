// A directory holding ring files of two jobs: a reader keeps one job, says what it ignored, and
// every reader of the same files keeps the same one.
#include "trace/job_choice.h"

#include <gtest/gtest.h>

#include <vector>

namespace ncclscope::trace {
namespace {

RingInfo File(const std::string& job, int64_t heartbeat_wall_s) {
  RingInfo f;
  f.job_id = job;
  // Each file's own clock pair: monotonic origins differ, the wall time is what compares.
  f.start_realtime_ns = 1'000'000'000'000;
  f.start_monotonic_ns = 5'000'000'000 + heartbeat_wall_s;
  f.heartbeat_monotonic_ns = f.start_monotonic_ns + heartbeat_wall_s * 1'000'000'000;
  return f;
}

std::vector<const RingInfo*> Ptrs(const std::vector<RingInfo>& v) {
  std::vector<const RingInfo*> out;
  for (const RingInfo& f : v) out.push_back(&f);
  return out;
}

TEST(ChooseJob, TheNewestHeartbeatsJobIsKept) {
  const std::vector<RingInfo> files = {File("old", 10), File("new", 20), File("old", 12),
                                       File("new", 19)};
  const JobChoice c = ChooseJob(Ptrs(files), "");
  EXPECT_EQ(c.job, "new");
  EXPECT_EQ(c.keep, (std::vector<char>{0, 1, 0, 1}));
  EXPECT_EQ(c.Note(), "ignored 2 ring file(s) of job old (kept job new, the newest heartbeat)");
}

TEST(ChooseJob, AnAskedJobIsKeptEvenIfOlder) {
  const std::vector<RingInfo> files = {File("old", 10), File("new", 20), File("", 30)};
  const JobChoice c = ChooseJob(Ptrs(files), "old");
  EXPECT_EQ(c.keep, (std::vector<char>{1, 0, 0}));
  EXPECT_EQ(c.Note(), "ignored 2 ring file(s) of jobs (none), new (kept job old, as asked)");
  // Asked for a job that has no file: everything is ignored, and said so.
  const JobChoice none = ChooseJob(Ptrs(files), "other");
  EXPECT_EQ(none.ignored_files, 3u);
}

// torchrun restarted the job into the same directory: the dead ranks of the first run are not the
// new run's, so only the newest run is kept, and the note says how many were left out.
TEST(ChooseJob, OnlyTheNewestRunOfTheJobIsKept) {
  std::vector<RingInfo> files = {File("j", 10), File("j", 11), File("j", 20), File("other", 5)};
  files[2].restart = 1;
  const JobChoice c = ChooseJob(Ptrs(files), "");
  EXPECT_EQ(c.job, "j");
  EXPECT_EQ(c.restart, 1u);
  EXPECT_EQ(c.keep, (std::vector<char>{0, 0, 1, 0}));
  EXPECT_EQ(c.earlier_run_files, 2u);
  EXPECT_EQ(c.LeftOut(), 3u);
  EXPECT_EQ(c.Note(),
            "ignored 1 ring file(s) of job other (kept job j, the newest heartbeat); ignored 2 "
            "ring file(s) of job j from runs before its restart 1 (TORCHELASTIC_RESTART_COUNT)");
}

TEST(ChooseJob, OneJobIgnoresNothing) {
  const std::vector<RingInfo> files = {File("j", 10), File("j", 20)};
  const JobChoice c = ChooseJob(Ptrs(files), "");
  EXPECT_EQ(c.ignored_files, 0u);
  EXPECT_EQ(c.Note(), "");
  EXPECT_EQ(ChooseJob({}, "").ignored_files, 0u);
}

TEST(ChooseJob, ATieGoesToTheSmallerIdWhateverTheOrder) {
  const std::vector<RingInfo> ab = {File("b", 10), File("a", 10)};
  const std::vector<RingInfo> ba = {File("a", 10), File("b", 10)};
  EXPECT_EQ(ChooseJob(Ptrs(ab), "").job, "a");
  EXPECT_EQ(ChooseJob(Ptrs(ba), "").job, "a");
}

}  // namespace
}  // namespace ncclscope::trace
