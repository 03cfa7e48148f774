// Coalesced ops in real jobs over the emulator (no probe): every collective of every group is
// carried and checked on every rank at several job sizes, and a fault on a group does to the whole
// group what it does to one op.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/sim/scenario/sim_job_test.h"

namespace ncclscope::sim {
namespace {

class CoalescedE2E : public SimJobTest {
 protected:
  // A scenario file with `text`, written beside dir_ and removed after the test.
  std::string write(const std::string& text) {
    std::string path = dir_.string() + "-scenario.json";
    std::ofstream(path) << text;
    written_ = path;
    return path;
  }
  // sim/scenarios/coalesced.json with `faults` (a JSON array text) added.
  std::string exampleWithFaults(const std::string& faults) {
    std::ifstream in(std::string(NCCLSCOPE_SCENARIOS_DIR) + "/coalesced.json");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return write(text.substr(0, text.rfind('}')) + ", \"faults\": " + faults + "}\n");
  }
  void TearDown() override {
    if (!written_.empty()) std::filesystem::remove(written_);
    SimJobTest::TearDown();
  }
  std::string written_;
};

// Groups of allgathers and a broadcast on the world, allreduces of four sizes and three dtypes on
// dp, and reduce-scatters with an allgather: dp is the whole job at 2 and 4 ranks, two groups of
// 4 at 8.
TEST_F(CoalescedE2E, ExampleChecksOutAtTwoFourAndEightRanks) {
  for (int n : {2, 4, 8}) {
    const JobResult r = run("coalesced.json", n, 60);
    EXPECT_EQ(r.rc, kSimOk) << n << " ranks\n" << r.out << r.err;
    EXPECT_NE(r.out.find("all " + std::to_string(n) + " ranks finished with correct results"),
              std::string::npos)
        << r.out;
  }
}

// Every collective kind in one group, rooted ones on different roots, in place, premulsum (its
// reduction created and destroyed inside the group), several dtypes, at an odd size.
TEST_F(CoalescedE2E, EveryCollectiveKindInOneGroupChecksOut) {
  const std::string scenario = write(R"({"description": "x", "seed": 5, "repeat": 2, "steps": [
      {"ops": [{"op": "coalesced", "ops": [
        {"op": "allreduce", "count": 100, "dtype": "float16", "redop": "premulsum", "scalar": 4},
        {"op": "broadcast", "count": 33, "dtype": "int32", "root": 2},
        {"op": "reduce", "count": 40, "dtype": "bfloat16", "redop": "min", "root": 1},
        {"op": "allgather", "count": 7, "dtype": "uint8"},
        {"op": "reducescatter", "count": 9, "dtype": "float64", "redop": "prod"},
        {"op": "alltoall", "count": 5, "dtype": "float32", "in_place": true},
        {"op": "gather", "count": 6, "dtype": "int64", "root": 1},
        {"op": "scatter", "count": 8, "dtype": "float8e4m3", "root": 2, "in_place": true}]},
        {"op": "allreduce", "count": 64}]}]})");
  const JobResult r = run(scenario, 3, 60);
  EXPECT_EQ(r.rc, kSimOk) << r.out << r.err;
  EXPECT_NE(r.out.find("all 3 ranks finished with correct results"), std::string::npos) << r.out;
}

// The host function enqueued before the group's ncclGroupStart blocks the stream, so none of the
// group's collectives starts on rank 1, and its dp peers wait in theirs.
TEST_F(CoalescedE2E, HangBeforeTheGroupNeverFinishes) {
  const std::string scenario =
      exampleWithFaults(R"([{"kind": "hang", "ranks": [1], "step": 1, "op": 0}])");
  const JobResult r = run(scenario, 4, 3);
  EXPECT_EQ(r.rc, kSimJobFailed) << r.out << r.err;
  EXPECT_NE(
      r.err.find("[rank 1] ncclscope-sim-rank: injecting hang at step 1 op 0 on 'dp' coalesced"),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("timeout after 3 s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 1: timed out"), std::string::npos) << r.err;
}

// A rank that skips the group leaves its peers waiting in every collective of it.
TEST_F(CoalescedE2E, SkippedGroupLeavesThePeersWaiting) {
  const std::string scenario =
      exampleWithFaults(R"([{"kind": "skip", "ranks": [2], "step": 1, "op": 1}])");
  const JobResult r = run(scenario, 4, 3);
  EXPECT_EQ(r.rc, kSimJobFailed) << r.out << r.err;
  EXPECT_NE(r.err.find("[rank 2] ncclscope-sim-rank: injecting skip at step 1 op 1 on 'dp' "
                       "coalesced: not issued"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("timeout after 3 s"), std::string::npos) << r.err;
}

// flip_output on a group corrupts its first collective and, with `every` 1, each collective the
// rank issues after it. The check flips the bit back and compares the rest, and the "corrupted as
// injected" line only comes out of a collective whose result was checked: every collective of
// both dp groups is.
TEST_F(CoalescedE2E, EveryCollectiveOfAGroupIsChecked) {
  const std::string scenario = exampleWithFaults(
      R"([{"kind": "flip_output", "ranks": [3], "step": 1, "op": 0, "bit": 100, "every": 1}])");
  const JobResult r = run(scenario, 4, 60);
  EXPECT_EQ(r.rc, kSimOk) << r.out << r.err;
  EXPECT_NE(r.err.find("[rank 3] ncclscope-sim-rank: injecting flip_output at step 1 op 0 "
                       "collective 0 on 'dp' allreduce: bit 100 of its output"),
            std::string::npos)
      << r.err;
  for (int k : {0, 1, 2, 3}) {
    EXPECT_NE(r.err.find("[rank 3] ncclscope-sim-rank: output of step 1 op 0 collective " +
                         std::to_string(k) + " corrupted as injected"),
              std::string::npos)
        << k << "\n"
        << r.err;
  }
  for (int k : {0, 1, 2}) {
    EXPECT_NE(r.err.find("[rank 3] ncclscope-sim-rank: output of step 1 op 1 collective " +
                         std::to_string(k) + " corrupted as injected"),
              std::string::npos)
        << k << "\n"
        << r.err;
  }
  EXPECT_EQ(r.err.find("[rank 2] ncclscope-sim-rank: output of"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ncclscope::sim
