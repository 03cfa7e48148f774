// The numerics examples run as real jobs over the emulator without the probe: every rank exits 0,
// and each rank's self-check says which outputs the injected NaN or bit flip changed, exactly.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/sim/scenario/sim_job_test.h"

namespace ncclscope::sim {
namespace {

class NumericsE2E : public SimJobTest {};

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string rankLine(int rank, const std::string& text) {
  return fmt::format("[rank {}] ncclscope-sim-rank: {}", rank, text);
}

// At 8 ranks and at 32 (the scenarios are also played at 32 ranks).
TEST_F(NumericsE2E, NanFromRankFiveSpreadsToEveryRankAndTheJobFinishes) {
  for (int n : {8, 32}) {
    SCOPED_TRACE(n);
    const JobResult r = run("numerics-nan.json", n, 60);
    ASSERT_EQ(r.rc, kSimOk) << r.out << r.err;
    EXPECT_NE(r.out.find(fmt::format("all {} ranks finished with correct results", n)),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.err.find(rankLine(5,
                                  "injecting nan_input at step 3 op 0 on 'world' allreduce: "
                                  "nan at input element 0")),
              std::string::npos)
        << r.err;
    EXPECT_EQ(occurrences(r.err, "injecting nan_input"), 1u) << r.err;
    for (int rank = 0; rank < n; ++rank) {
      SCOPED_TRACE(rank);
      // Rank 5's NaN reaches element 0 of everyone's sum, ...
      EXPECT_NE(r.err.find(rankLine(rank,
                                    "output of step 3 op 0 poisoned as injected (1 of 1024 "
                                    "elements NaN/Inf)")),
                std::string::npos)
          << r.err;
      EXPECT_NE(r.err.find(rankLine(rank, "nan_input spread: output of step 3 op 0 holds NaN/Inf")),
                std::string::npos)
          << r.err;
      // ... and from step 4 on every rank's own inputs carry NaN: a NaN in each slot of a gather.
      EXPECT_NE(r.err.find(rankLine(rank, fmt::format("output of step 4 op 1 poisoned as injected "
                                                      "({} of {} elements NaN/Inf)",
                                                      n, 128 * n))),
                std::string::npos)
          << r.err;
      EXPECT_NE(r.err.find(rankLine(rank,
                                    "output of step 5 op 2 poisoned as injected (1 of 256 "
                                    "elements NaN/Inf)")),
                std::string::npos)
          << r.err;
    }
    // Nothing before the fault.
    EXPECT_EQ(r.err.find("output of step 2 op"), std::string::npos) << r.err;
  }
}

// Without spread, a NaN stays in the op it was put into.
TEST_F(NumericsE2E, NanWithoutSpreadReachesOnlyItsOwnOp) {
  const std::string scenario = dir_.string() + "-nospread.json";
  {
    std::ofstream f(scenario);
    f << R"({"description": "x", "seed": 5, "repeat": 3, "steps": [{"ops": [
             {"op": "allreduce", "count": 64, "dtype": "bfloat16"},
             {"op": "reduce", "count": 64, "root": 1}]}],
           "faults": [{"kind": "nan_input", "ranks": [2], "step": 1, "op": 1, "value": "-inf",
                       "index": 9, "spread": false}]})";
  }
  const JobResult r = run(scenario, 4, 30);
  std::filesystem::remove(scenario);
  ASSERT_EQ(r.rc, kSimOk) << r.out << r.err;
  // Only the root of the reduce has an output there.
  EXPECT_EQ(occurrences(r.err, "poisoned as injected"), 1u) << r.err;
  EXPECT_EQ(occurrences(r.err,
                        "injecting nan_input at step 1 op 1 on 'world' reduce: -inf at "
                        "input element 9"),
            1u)
      << r.err;
  EXPECT_NE(r.err.find(rankLine(1,
                                "output of step 1 op 1 poisoned as injected (1 of 64 elements "
                                "NaN/Inf)")),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("spread"), std::string::npos) << r.err;
}

TEST_F(NumericsE2E, FlipCorruptsRankTwosAllreduceOnceAndTheJobFinishes) {
  for (int n : {8, 32}) {
    const JobResult r = run("numerics-flip.json", n, 60);
    EXPECT_EQ(r.rc, kSimOk) << n << " ranks\n" << r.out << r.err;
    EXPECT_NE(r.out.find(fmt::format("all {} ranks finished with correct results", n)),
              std::string::npos)
        << r.out;
  }
  const JobResult r = run("numerics-flip.json", 8, 60);
  ASSERT_EQ(r.rc, kSimOk) << r.out << r.err;
  EXPECT_NE(r.err.find(rankLine(2,
                                "injecting flip_output at step 2 op 0 on 'world' allreduce: "
                                "bit 100 of its output")),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(rankLine(2,
                                "output of step 2 op 0 corrupted as injected (bit 100 "
                                "flipped)")),
            std::string::npos)
      << r.err;
  EXPECT_EQ(occurrences(r.err, "corrupted as injected"), 1u) << r.err;
  EXPECT_EQ(r.err.find("poisoned"), std::string::npos) << r.err;
}

// 6 steps of an allreduce and an allgather; from step 1 op 0 (rank 6's 3rd collective) every 3rd.
TEST_F(NumericsE2E, CorrupterFlipsEveryThirdCollectiveOfRankSix) {
  for (int n : {8, 32}) {
    const JobResult r = run("numerics-corrupter.json", n, 60);
    EXPECT_EQ(r.rc, kSimOk) << n << " ranks\n" << r.out << r.err;
    EXPECT_NE(r.out.find(fmt::format("all {} ranks finished with correct results", n)),
              std::string::npos)
        << r.out;
  }
  const JobResult r = run("numerics-corrupter.json", 8, 60);
  ASSERT_EQ(r.rc, kSimOk) << r.out << r.err;
  for (const char* at : {"step 1 op 0", "step 2 op 1", "step 4 op 0", "step 5 op 1"}) {
    EXPECT_NE(r.err.find(rankLine(6, fmt::format("output of {} corrupted as injected (bit 3 "
                                                 "flipped)",
                                                 at))),
              std::string::npos)
        << at << "\n"
        << r.err;
  }
  EXPECT_EQ(occurrences(r.err, "corrupted as injected"), 4u) << r.err;
  EXPECT_EQ(occurrences(r.err, "injecting flip_output"), 4u) << r.err;
}

}  // namespace
}  // namespace ncclscope::sim
