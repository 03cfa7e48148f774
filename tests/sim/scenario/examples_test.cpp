// Every example in sim/scenarios/ parses and fits every job size it claims (min_ranks up to 32),
// and together they cover every fault kind.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "sim/scenario/comm_layout.h"
#include "sim/scenario/names.h"
#include "sim/scenario/scenario_parser.h"

namespace ncclscope::sim {
namespace {

std::vector<std::string> exampleFiles() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(NCCLSCOPE_SCENARIOS_DIR)) {
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ExampleScenarios, AllParseAndFitFourToThirtyTwoRanks) {
  const auto files = exampleFiles();
  ASSERT_GE(files.size(), 20u);
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    Scenario s;
    ASSERT_NO_THROW(s = parseScenarioFile(f));
    EXPECT_FALSE(s.description.empty());
    for (int n : {4, 5, 7, 8, 16, 32}) {
      if (n < s.min_ranks) continue;
      EXPECT_NO_THROW(checkScenarioForRanks(s, n)) << n << " ranks";
    }
  }
}

TEST(ExampleScenarios, CoverEveryFaultKind) {
  std::set<FaultKind> seen;
  std::set<CrashMode> crashes;
  for (const std::string& f : exampleFiles()) {
    for (const FaultSpec& fault : parseScenarioFile(f).faults) {
      seen.insert(fault.kind);
      if (fault.kind == FaultKind::kCrash) crashes.insert(fault.crash_mode);
    }
  }
  for (int k = 0; k <= static_cast<int>(FaultKind::kFlipOutput); ++k) {
    EXPECT_TRUE(seen.count(static_cast<FaultKind>(k))) << faultKindName(static_cast<FaultKind>(k));
  }
  EXPECT_EQ(crashes.size(), 3u);
}

TEST(ExampleScenarios, HealthyUsesEveryOpAndNoFault) {
  const Scenario s = parseScenarioFile(std::string(NCCLSCOPE_SCENARIOS_DIR) + "/healthy.json");
  EXPECT_TRUE(s.faults.empty());
  EXPECT_GT(s.repeat, 1);
  std::set<OpKind> ops;
  std::set<RedOp> redops;
  for (const StepSpec& step : s.steps) {
    for (const OpSpec& op : step.ops) {
      ops.insert(op.kind);
      if (opReduces(op.kind)) redops.insert(op.redop);
    }
  }
  EXPECT_EQ(ops.size(), 9u);
  EXPECT_EQ(redops.size(), 6u);
}

// healthy.json covers the original nine; ops added since may live in an example of their own
// (alltoallv.json, coalesced.json), but every op kind is played by some example.
TEST(ExampleScenarios, CoverEveryOpKind) {
  std::set<OpKind> ops;
  for (const std::string& f : exampleFiles()) {
    for (const StepSpec& step : parseScenarioFile(f).steps) {
      for (const OpSpec& op : step.ops) ops.insert(op.kind);
    }
  }
  for (int k = 0; k <= static_cast<int>(OpKind::kCoalesced); ++k) {
    EXPECT_TRUE(ops.count(static_cast<OpKind>(k))) << opKindName(static_cast<OpKind>(k));
  }
}

TEST(ExampleScenarios, AlltoallvExampleRunsFromTwoRanksWithBothSplits) {
  const Scenario s = parseScenarioFile(std::string(NCCLSCOPE_SCENARIOS_DIR) + "/alltoallv.json");
  EXPECT_EQ(s.min_ranks, 2);
  EXPECT_TRUE(s.faults.empty());
  std::set<bool> equal;
  for (const StepSpec& step : s.steps) {
    for (const OpSpec& op : step.ops) {
      EXPECT_EQ(op.kind, OpKind::kAllToAllV);
      equal.insert(op.equal_counts);
    }
  }
  EXPECT_EQ(equal.size(), 2u);
  for (int n : {2, 3}) EXPECT_NO_THROW(checkScenarioForRanks(s, n)) << n << " ranks";
}

TEST(ExampleScenarios, DemoStopsOneRankBeforeACollectiveOfASplit) {
  const Scenario s = parseScenarioFile(std::string(NCCLSCOPE_SCENARIOS_DIR) + "/demo.json");
  EXPECT_EQ(s.min_ranks, 8);
  ASSERT_EQ(s.faults.size(), 1u);
  const FaultSpec& f = s.faults[0];
  EXPECT_EQ(f.kind, FaultKind::kStuckBefore);
  EXPECT_EQ(f.ranks.size(), 1u);
  EXPECT_NE(s.stepAt(f.step).ops[static_cast<size_t>(*f.op)].comm, "world");
}

}  // namespace
}  // namespace ncclscope::sim
