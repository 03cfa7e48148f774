// A communicator whose creation never finishes is still named in verdicts: the probe publishes its
// comm table entry (id and the ncclConfig_t commName) when the creation call begins, so ranks
// blocked inside ncclCommInitRankConfig or ncclCommSplit show what they wait for. The emulated
// jobs name every communicator (world, tp, dp) through commName.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <string>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"

namespace ncclscope::testing {
namespace {

constexpr int kCreationRanks = 8;
// The creation blocks for good: the launcher ends the job after kKillAfterS, and a wait counts once
// it lasted kStallAfterS, which leaves the ranks 4 s to start and reach the creation on a loaded
// machine.
constexpr const char* kStallAfterS = "1";

// `ncclscope analyze DIR --job-ended --json`: the one verdict of a job that hung in a creation.
nlohmann::json InitHangVerdict(const std::string& dir) {
  const ProcessResult p = RunProcess(
      {Cli(), "analyze", dir, "--job-ended", "--stall-after", kStallAfterS, "--json"}, {}, 60);
  EXPECT_EQ(p.exit_code, 2) << p.out << p.err;
  const auto doc = nlohmann::json::parse(p.out, nullptr, false);
  if (doc.is_discarded() || !doc.contains("verdicts") || doc.at("verdicts").empty()) {
    ADD_FAILURE() << "no verdict in:\n" << p.out << p.err;
    return {};
  }
  const nlohmann::json& v = doc.at("verdicts").at(0);
  EXPECT_EQ(v.value("class", ""), "init-hang") << v.dump(1);
  return v;
}

// The comm table entries named `name` in every rank's dump, as rank -> comm id.
std::map<int, std::string> EntriesNamed(const std::map<int, RankDump>& dump,
                                        const std::string& name) {
  std::map<int, std::string> out;
  for (const auto& [rank, d] : dump) {
    for (const nlohmann::json& c : d.comms) {
      if (c.value("name", "") != name) continue;
      EXPECT_EQ(out.count(rank), 0u) << "rank " << rank << " has two entries named " << name;
      out[rank] = c.value("comm_id", "");
    }
  }
  return out;
}

TEST(CommNameAtCreation, WorldThatNeverFormsIsNamedInTheVerdict) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  // The last rank never calls ncclCommInitRankConfig for world; the others wait inside it.
  const ProcessResult sim = RunSim("never-join-world.json", kCreationRanks, dir, kKillAfterS);
  EXPECT_EQ(sim.exit_code, 1) << sim.out << sim.err;

  const nlohmann::json v = InitHangVerdict(dir);
  EXPECT_EQ(v.value("comm_name", ""), "world") << v.dump(1);
  EXPECT_NE(v.value("summary", "").find("creation of world"), std::string::npos) << v.dump(1);
  EXPECT_NE(v.value("headline", "").find("comm world"), std::string::npos) << v.dump(1);

  // Every rank blocked in the creation holds one entry for it, under the one id of the verdict.
  const auto world = EntriesNamed(DumpJson(dir), "world");
  EXPECT_EQ(world.size(), static_cast<size_t>(kCreationRanks - 1));
  for (const auto& [rank, id] : world) {
    EXPECT_EQ(id, v.value("comm_id", "")) << "rank " << rank;
  }
}

TEST(CommNameAtCreation, SplitThatNeverFormsIsNamedInTheTrace) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  // Ranks 1 and 2 never call the split that creates dp; the others wait inside it.
  const ProcessResult sim = RunSim("never-join.json", kCreationRanks, dir, kKillAfterS);
  EXPECT_EQ(sim.exit_code, 1) << sim.out << sim.err;

  const nlohmann::json v = InitHangVerdict(dir);
  EXPECT_EQ(v.value("comm_name", ""), "world") << "a split is reported on its parent";
  EXPECT_EQ(v.value("op", ""), "comm_split");

  // The children the waiting ranks are creating (named by id in the evidence) are dp: each
  // blocked rank's table names the child its own split call is making.
  std::set<int> waiting;
  std::map<int, std::string> child_of;
  for (const nlohmann::json& e : v.at("evidence")) {
    const std::string text = e.value("text", "");
    const auto at = text.find("child ");
    if (at == std::string::npos) continue;
    waiting.insert(e.value("rank", -1));
    // "child dp 5ce130d4e54168a1": the name, then the id.
    child_of[e.value("rank", -1)] = text.substr(text.rfind(' ') + 1);
  }
  EXPECT_EQ(waiting, (std::set<int>{0, 3, 4, 5, 6, 7})) << v.dump(1);
  const auto dp = EntriesNamed(DumpJson(dir), "dp");
  for (const auto& [rank, child] : child_of) {
    ASSERT_EQ(dp.count(rank), 1u) << "rank " << rank << " has no entry named dp";
    EXPECT_EQ(dp.at(rank), child) << "rank " << rank;
  }
  EXPECT_EQ(dp.count(1), 0u) << "rank 1 never called the split";
  EXPECT_EQ(dp.count(2), 0u) << "rank 2 never called the split";
}

}  // namespace
}  // namespace ncclscope::testing
