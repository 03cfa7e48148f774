// A rank SIGKILLed mid-run: the point of a ring file in shared memory is that what the rank
// recorded before it died is still there, whole, for the post-mortem.
#include <gtest/gtest.h>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/sim_plan.h"

namespace ncclscope::testing {
namespace {

TEST(KilledRank, EveryRecordBeforeTheKillIsReadable) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  // Rank 1 dies at the start of step 2; the others then wait for it until the launcher's timeout.
  const ProcessResult sim = RunSim("crash-sigkill.json", 4, dir, 2);
  EXPECT_EQ(sim.exit_code, 1) << sim.out << sim.err;
  EXPECT_NE(sim.err.find("rank 1: killed by SIGKILL"), std::string::npos) << sim.err;

  const auto dump = DumpJson(dir);
  ASSERT_EQ(dump.count(1), 1u) << "the dead rank's ring must parse";
  const RankDump& d = dump.at(1);
  const RankPlan plan = LoadPlan(ScenarioPath("crash-sigkill.json"), 1, 4);
  ASSERT_FALSE(plan.stop.is_null()) << "the plan says where rank 1 dies";
  EXPECT_EQ(plan.stop.at("step"), 2);
  const int torn = d.header.at("torn_records");
  EXPECT_LE(torn, 1) << "at most the record being written when the kill landed";
  EXPECT_EQ(d.records.size() + static_cast<size_t>(torn), plan.calls.size())
      << "every call up to the kill, no more";
  ExpectRecordsMatchPlan(d, plan.calls);
}

}  // namespace
}  // namespace ncclscope::testing
