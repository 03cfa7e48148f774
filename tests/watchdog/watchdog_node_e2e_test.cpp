// End to end, 8-rank jobs on the emulator: one watchdog per node correlates. The stalled rank that
// holds the node lock decides and leaves its line in the lock file; the others follow the job's
// incident record. So a hang is correlated by exactly one process, abort mode still reaches every
// stuck rank through the record, and when the deciding rank is killed another one takes over (the
// kernel releases a dead holder's lock). Every assertion is something the design guarantees at any
// load: counts of holders and reports, who aborted, that the job ended by itself.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "tests/watchdog/sim_job.h"
#include "tests/watchdog/text_file.h"

namespace ncclscope::testing {
namespace {

SimJob Start(const std::string& path, const std::vector<std::string>& env, const std::string& root,
             double timeout_s) {
  SimSpec spec;
  spec.scenario_path = path;
  spec.env = env;
  spec.timeout_s = timeout_s;
  return StartSim(spec, root);
}

const char* const kConfirmSoon = "NCCLSCOPE_CONFIRM_FLOOR_MS=3000";

TEST(WatchdogNode, OneProcessCorrelatesAHang) {
  Root root;
  SimJob job = Start(Shipped("stuck-before"), {kConfirmSoon}, root.path, 12);
  WaitSim(&job);
  SCOPED_TRACE(job.err);
  // Seven ranks wait and stall; one took the lock, and it alone correlated and reported. On a
  // loaded machine a rank may also stall for a moment before the hang (its peers late): it takes
  // the lock and gives it back on progress, so the log may hold earlier lines. The hang's decider
  // is the last one.
  const std::vector<int> holders = Holders(job.dir);
  ASSERT_GE(holders.size(), 1u);
  const int decider = holders.back();
  const RecordView d = ReadIncident(job.dir);
  EXPECT_EQ(d.holder, decider) << d.text;
  EXPECT_EQ(d.stage, "hang") << d.text;
  EXPECT_EQ(Count(job.err, "verdict written to"), 1);
  EXPECT_EQ(Count(job.err, "(pid " + std::to_string(decider) + "): "),
            Count(job.err, "ncclscope: watchdog of rank "));
  EXPECT_EQ(Count(job.err, "ncclscope: warning"), 0);
}

// crash-sigkill without its pipeline: every rank ends up waiting in a collective, so the decision
// record names where each one waits (send/recv waits are not in the correlator's "waiting" view,
// whose communicators abort mode leaves).
constexpr const char* kCollectivesCrash = R"({
  "name": "collectives-crash",
  "description": "Rank 1 is SIGKILLed at the start of step 2; the others wait in collectives.",
  "seed": 11,
  "min_ranks": 4,
  "repeat": 3,
  "compute": {"ms": 1},
  "communicators": [
    {"name": "tp", "split": {"by": "block", "size": 2}},
    {"name": "dp", "split": {"by": "stride", "stride": 2}}
  ],
  "steps": [
    {"name": "forward", "ops": [{"op": "allreduce", "comm": "tp", "count": 256, "dtype": "float32"}]},
    {
      "name": "backward",
      "ops": [
        {"op": "allreduce", "comm": "dp", "count": 256, "dtype": "float32", "redop": "sum"},
        {"op": "broadcast", "count": 64, "dtype": "int32", "root": 0}
      ]
    }
  ],
  "faults": [{"kind": "crash", "ranks": [1], "step": 2, "mode": "sigkill"}]
})";

TEST(WatchdogNode, AbortReachesEveryStuckRank) {
  // Rank 1 is killed: a dead rank confirms the hang at once. Every survivor ends up waiting for
  // it; only the decider correlates, the others abort from the job's incident record. Without
  // fail-fast the launcher waits for every rank, so the job ends before its timeout only if all
  // seven aborted.
  Root root;
  const std::string scenario = root.path + "/collectives-crash.json";
  std::ofstream(scenario) << kCollectivesCrash;
  SimJob job = Start(scenario, {"NCCLSCOPE_ON_HANG=abort"}, root.path, 60);
  WaitSim(&job);
  SCOPED_TRACE(job.err);
  EXPECT_EQ(Count(job.err, "timeout after"), 0);
  EXPECT_LT(job.wall_s, job.timeout_s);
  EXPECT_EQ(AbortingRanks(job.err), (std::set<int>{0, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(Count(job.err, "verdict written to"), 1);
  EXPECT_GE(Holders(job.dir).size(), 1u);
}

TEST(WatchdogNode, AnotherRankTakesOverWhenTheDeciderIsKilled) {
  Root root;
  // A suspect for the whole run (60 s confirmation): the decider keeps looking and publishing.
  SimJob job = Start(Shipped("stuck-before"), {}, root.path, 40);
  // The decider of this hang: its record names rank 2 (a moment's stall earlier, on a loaded
  // machine, may have had another holder, which progress released).
  int first = 0;
  ASSERT_TRUE(WaitUntil(job, [&] {
    const RecordView r = ReadIncident(job.dir);
    first = r.holder;
    return first != 0 && r.text.find("\nculprits 2\n") != std::string::npos;
  }));
  ASSERT_EQ(kill(first, SIGKILL), 0);
  int second = 0;
  const bool took_over = WaitUntil(job, [&] {
    second = ReadIncident(job.dir).holder;
    return second != 0 && second != first;
  });
  WaitSim(&job);
  SCOPED_TRACE(job.err);
  EXPECT_TRUE(took_over);
  // The last two acquisitions: the killed decider's, then its successor's, which decides from then
  // on (a moment's stall before the hang, on a loaded machine, may have left an earlier line).
  const std::vector<int> holders = Holders(job.dir);
  ASSERT_GE(holders.size(), 2u);
  EXPECT_EQ(std::vector<int>(holders.end() - 2, holders.end()), (std::vector<int>{first, second}));
  EXPECT_EQ(ReadIncident(job.dir).holder, second);
  EXPECT_TRUE(std::filesystem::exists(job.dir + "/verdict.json"));
}

}  // namespace
}  // namespace ncclscope::testing
