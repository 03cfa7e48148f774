// Which training step and phase each call belongs to, end to end: `ncclscope sim` injects the
// probe through NVTX_INJECTION64_PATH as `ncclscope run` does, the scenario runner opens a
// "step N" range, inside it a range named like the scenario's step (its phase: forward,
// backward, optimizer) and inside that "compute" and "collectives" (sim/scenario/rank_runner.cpp),
// and `ncclscope dump --json` names the step and phase of every collective and send/recv.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tests/e2e/cli.h"
#include "tests/e2e/op_kinds.h"
#include "tests/e2e/scratch_dir.h"

namespace ncclscope::testing {
namespace {

const std::set<std::string> kPhases = {"forward", "backward", "optimizer"};

// Every device-work record of every rank names its step and phase; steps rise from 0 with the
// program and every rank went through the same steps.
void ExpectStepsAndPhases(const std::map<int, RankDump>& dump, int ranks) {
  ASSERT_EQ(static_cast<int>(dump.size()), ranks);
  std::set<uint64_t> first_rank_steps;
  for (const auto& [rank, d] : dump) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_FALSE(d.nvtx_names.empty()) << "the context names are in the ring";
    std::set<uint64_t> steps;
    uint64_t last = 0;
    for (const auto& r : d.records) {
      if (!IsDeviceWork(r.at("op"))) continue;
      ASSERT_TRUE(r.contains("step")) << r.dump();
      ASSERT_TRUE(r.contains("phase")) << r.dump();
      // healthy.json's steps are forward, backward and optimizer; calls are made in collectives.
      EXPECT_EQ(kPhases.count(r.at("phase")), 1u) << r.dump();
      EXPECT_EQ(r.value("range", ""), "collectives") << r.dump();
      const uint64_t step = r.at("step");
      EXPECT_GE(step, last) << "steps follow the program";
      last = step;
      steps.insert(step);
    }
    ASSERT_FALSE(steps.empty());
    EXPECT_EQ(*steps.begin(), 0u);
    EXPECT_GE(steps.size(), 2u);
    if (first_rank_steps.empty()) first_rank_steps = steps;
    EXPECT_EQ(steps, first_rank_steps);
  }
}

TEST(NvtxSteps, EveryCollectiveNamesItsStepAndPhase) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunSim("healthy.json", 4, dir, 60);
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  EXPECT_EQ(sim.err.find("ncclscope: warning:"), std::string::npos) << sim.err;
  ExpectStepsAndPhases(DumpJson(dir), 4);
}

// A bad pattern is the user's mistake, not the job's: one warning line per rank naming the
// variable and what is wrong, the default pattern, and the job unharmed.
TEST(NvtxSteps, BadPatternWarnsAndKeepsTheDefault) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const ProcessResult sim =
      RunSim("healthy.json", 4, dir, 60, {{"NCCLSCOPE_NVTX_STEP_PATTERN", "step"}});
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  EXPECT_NE(sim.err.find("NCCLSCOPE_NVTX_STEP_PATTERN='step': alternative 1 'step' has no %d"),
            std::string::npos)
      << sim.err;
  ExpectStepsAndPhases(DumpJson(dir), 4);
}

// A custom pattern replaces the default: "step N" ranges are then no steps at all.
TEST(NvtxSteps, CustomPatternDecidesWhatAStepIs) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const ProcessResult sim =
      RunSim("healthy.json", 4, dir, 60, {{"NCCLSCOPE_NVTX_STEP_PATTERN", "iteration %d"}});
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  for (const auto& [rank, d] : DumpJson(dir)) {
    for (const auto& r : d.records) {
      if (!IsDeviceWork(r.at("op"))) continue;
      EXPECT_FALSE(r.contains("step")) << r.dump();
      EXPECT_EQ(r.value("range", ""), "collectives") << r.dump();  // still its innermost range
    }
  }
}

}  // namespace
}  // namespace ncclscope::testing
