#include <gtest/gtest.h>

#include "sim/scenario/rank_faults.h"
#include "tests/sim/scenario/test_scenario_text.h"

namespace ncclscope::sim {
namespace {

const char* kScenario = R"({
  "seed": 3, "repeat": 4,
  "compute": {"ms": 10, "per_rank": {"-1": 20}},
  "communicators": [{"name": "tp", "split": {"by": "block", "size": 2}}],
  "steps": [{"ops": [{"op": "allreduce", "comm": "tp", "count": 8},
                     {"op": "allreduce", "count": 8}]}],
  "faults": [
    {"kind": "compute_slowdown", "ranks": [1], "step": 1, "until_step": 2, "factor": 3},
    {"kind": "compute_slowdown", "ranks": [1], "step": 2, "extra_ms": 5},
    {"kind": "slow_link", "ranks": [1, 2], "step": 2, "factor": 4},
    {"kind": "skip", "ranks": [2], "step": 2, "op": 0},
    {"kind": "hang", "ranks": [0], "step": 1, "op": 1},
    {"kind": "crash", "ranks": [3], "step": 3},
    {"kind": "freeze", "ranks": [3], "step": 2, "op": 1},
    {"kind": "never_join", "ranks": [-2], "comm": "tp"},
    {"kind": "hung_link", "ranks": [-1], "step": 2}]})";

TEST(RankFaults, ComputeTimeFollowsOverridesAndSlowdowns) {
  const Scenario s = testing::parse(kScenario);
  EXPECT_EQ(RankFaults(s, 1, 4).computeMs(s.compute, 0), 10);
  EXPECT_EQ(RankFaults(s, 1, 4).computeMs(s.compute, 1), 30);
  EXPECT_EQ(RankFaults(s, 1, 4).computeMs(s.compute, 2), 35);  // x3, then +5
  EXPECT_EQ(RankFaults(s, 1, 4).computeMs(s.compute, 3), 15);  // factor ended at step 2
  EXPECT_EQ(RankFaults(s, 3, 4).computeMs(s.compute, 0), 20);  // per_rank -1
  ComputeSpec jitter{1, {}, 2};
  const double a = RankFaults(s, 0, 4).computeMs(jitter, 0);
  EXPECT_GE(a, 1);
  EXPECT_LT(a, 3);
  EXPECT_EQ(a, RankFaults(s, 0, 4).computeMs(jitter, 0));  // reproducible from the seed
  EXPECT_NE(a, RankFaults(s, 0, 4).computeMs(jitter, 1));
}

TEST(RankFaults, WhichFaultsApplyWhere) {
  const Scenario s = testing::parse(kScenario);
  EXPECT_EQ(RankFaults(s, 2, 4).linkFactor(1), 1.0);
  EXPECT_EQ(RankFaults(s, 2, 4).linkFactor(3), 4.0);
  EXPECT_EQ(RankFaults(s, 0, 4).linkFactor(3), 1.0);
  EXPECT_EQ(RankFaults(s, 2, 4).opFaults(2, 0).size(), 1u);
  EXPECT_TRUE(RankFaults(s, 2, 4).opFaults(2, 1).empty());
  EXPECT_EQ(RankFaults(s, 0, 4).opFaults(1, 1).at(0)->kind, FaultKind::kHang);
  EXPECT_EQ(RankFaults(s, 3, 4).processFaults(3, std::nullopt).size(), 1u);
  EXPECT_EQ(RankFaults(s, 3, 4).processFaults(2, 1).at(0)->kind, FaultKind::kFreeze);
  EXPECT_TRUE(RankFaults(s, 3, 4).processFaults(2, std::nullopt).empty());
  EXPECT_TRUE(RankFaults(s, 2, 4).neverJoins("tp"));
  EXPECT_FALSE(RankFaults(s, 2, 4).neverJoins("world"));
  EXPECT_FALSE(RankFaults(s, 3, 4).neverJoins("tp"));
  // A hung link stays hung from its step on, on its rank only; it is no per-op fault.
  EXPECT_FALSE(RankFaults(s, 3, 4).linkHung(1));
  EXPECT_TRUE(RankFaults(s, 3, 4).linkHung(2));
  EXPECT_TRUE(RankFaults(s, 3, 4).linkHung(3));
  EXPECT_FALSE(RankFaults(s, 2, 4).linkHung(3));
  EXPECT_TRUE(RankFaults(s, 3, 4).opFaults(2, 0).empty());
  EXPECT_EQ(RankFaults(s, 3, 4).linkFactor(3), 1.0);
}

// Rank 2 skipping a tp op disturbs its tp group {2,3} from that op on, nothing else.
TEST(RankFaults, DesyncTurnsOffTheCheckOfTheAffectedGroupOnly) {
  const Scenario s = testing::parse(kScenario);
  const JobLayout job(s, 4);
  const int tp = job.indexOf("tp");
  EXPECT_FALSE(groupDesynced(s, job, tp, 3, 1, 0));
  EXPECT_TRUE(groupDesynced(s, job, tp, 3, 2, 0));
  EXPECT_TRUE(groupDesynced(s, job, tp, 2, 3, 0));
  EXPECT_FALSE(groupDesynced(s, job, tp, 0, 3, 0));
  EXPECT_FALSE(groupDesynced(s, job, 0, 3, 3, 1));  // world is not the skipped op's comm
}

TEST(RankFaults, Describe) {
  const Scenario s = testing::parse(kScenario);
  EXPECT_EQ(describeFault(s.faults[3]), "skip at step 2 op 0");
  EXPECT_EQ(describeFault(s.faults[5]), "crash at step 3");
  EXPECT_EQ(describeFault(s.faults[7]), "never_join of 'tp'");
}

}  // namespace
}  // namespace ncclscope::sim
