// Real jobs over the emulator: ncclscope-sim-rank processes started by the launcher, no probe.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/sim/scenario/sim_job_test.h"

namespace ncclscope::sim {
namespace {

// Each test gets its own trace directory (removed after) and runs jobs without the probe.
class LauncherE2E : public SimJobTest {};

TEST_F(LauncherE2E, HealthyAtFourAndEightRanks) {
  for (int n : {4, 8}) {
    const JobResult r = run("healthy.json", n, 30);
    EXPECT_EQ(r.rc, kSimOk) << n << " ranks\n" << r.out << r.err;
    EXPECT_NE(r.out.find("all " + std::to_string(n) + " ranks finished with correct results"),
              std::string::npos);
  }
  EXPECT_TRUE(std::filesystem::is_directory(dir_));
  EXPECT_EQ(std::filesystem::status(dir_).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);
}

// The emulated NCCL carries every part of the uneven all-to-all, at sizes down to one rank (which
// sends only to itself in its ep group of one at 3 ranks), and every rank checks what it got.
TEST_F(LauncherE2E, AlltoallvAtTwoThreeFourAndEightRanks) {
  for (int n : {2, 3, 4, 8}) {
    const JobResult r = run("alltoallv.json", n, 30);
    EXPECT_EQ(r.rc, kSimOk) << n << " ranks\n" << r.out << r.err;
    EXPECT_NE(r.out.find("all " + std::to_string(n) + " ranks finished with correct results"),
              std::string::npos)
        << r.out;
  }
}

// A rank that issues its alltoallv with other part sizes desyncs it: its peers' receives wait
// for parts of the size they expect, and the job never finishes.
TEST_F(LauncherE2E, AlltoallvWithAWrongCountNeverFinishes) {
  const std::filesystem::path scenario = dir_.string() + "-wrong-count.json";
  {
    std::ofstream f(scenario);
    f << R"({"description": "x", "seed": 11, "steps": [{"ops": [
             {"op": "alltoallv", "count": 3}]}],
           "faults": [{"kind": "wrong_count", "ranks": [1], "step": 0, "op": 0}]})";
  }
  const JobResult r = run(scenario.string(), 4, 3);
  std::filesystem::remove(scenario);
  EXPECT_EQ(r.rc, kSimJobFailed) << r.out << r.err;
  EXPECT_NE(r.err.find("[rank 1] ncclscope-sim-rank: injecting wrong_count at step 0 op 0 on "
                       "'world' alltoallv"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("timeout after 3 s"), std::string::npos) << r.err;
}

TEST_F(LauncherE2E, HangIsReportedAsTimeout) {
  const JobResult r = run("hang.json", 4, 5);
  EXPECT_EQ(r.rc, kSimJobFailed) << r.out << r.err;
  EXPECT_LT(r.seconds, 8.0);
  EXPECT_NE(r.err.find("timeout after 5 s: ranks "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[rank 1] ncclscope-sim-rank: injecting hang at step 2 op 0"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rank 1: timed out"), std::string::npos) << r.err;
}

TEST_F(LauncherE2E, CrashReportsTheSignal) {
  const JobResult r = run("crash-segfault.json", 4, 3);
  EXPECT_EQ(r.rc, kSimJobFailed) << r.out << r.err;
  EXPECT_NE(r.err.find("rank 3: killed by SIGSEGV"), std::string::npos) << r.err;
}

TEST_F(LauncherE2E, FrozenRankIsKilledOnTimeout) {
  const JobResult r = run("freeze.json", 4, 3);
  EXPECT_EQ(r.rc, kSimJobFailed) << r.out << r.err;
  EXPECT_LT(r.seconds, 6.0);
  EXPECT_NE(r.err.find("rank 2: timed out"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ncclscope::sim
