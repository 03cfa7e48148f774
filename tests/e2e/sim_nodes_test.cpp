// `ncclscope sim --nodes 2`: an 8-rank job on two simulated nodes, each with its own host name and
// trace directory <dir>/<job>/<host>, as the multi-node tests need: ranks 0-3 on node0, 4-7 on
// node1, named so in their ring files' names and headers, and only there.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"

namespace ncclscope::testing {
namespace {

TEST(SimNodes, TwoNodesHoldTheirOwnRanksUnderTheirOwnHostNames) {
  ScratchDir scratch;
  const std::string base = scratch / "trace";
  const ProcessResult sim =
      RunProcess({Cli(), "sim", "--ranks", "8", "--nodes", "2", "--scenario",
                  ScenarioPath("healthy.json"), "--dir", base, "--timeout", "60"},
                 {{"NCCLSCOPE_RING_RECORDS", "1024"}}, 90);
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(sim.out, m, std::regex("job (sim-[0-9a-f]+)"))) << sim.out;
  const std::string job_dir = base + "/" + m[1].str();
  for (int node = 0; node < 2; ++node) {
    SCOPED_TRACE("node " + std::to_string(node));
    const std::string host = "node" + std::to_string(node);
    const std::string dir = job_dir + "/" + host;
    // Printed, so a test (or a user) finds each node's directory.
    EXPECT_NE(sim.out.find("node " + host + ": ranks " + std::to_string(4 * node) + "-" +
                           std::to_string(4 * node + 3) + ", trace dir " + dir),
              std::string::npos)
        << sim.out;
    const auto dump = DumpJson(dir);
    ASSERT_EQ(dump.size(), 4u) << dir;
    for (int r = 4 * node; r < 4 * node + 4; ++r) {
      ASSERT_EQ(dump.count(r), 1u) << "rank " << r << " not in " << dir;
      const auto& h = dump.at(r).header;
      EXPECT_EQ(h.at("host"), host);
      EXPECT_EQ(h.at("local_rank"), r - 4 * node);
      EXPECT_EQ(h.at("world_size"), 8);
      const std::string file = std::filesystem::path(h.at("file").get<std::string>()).filename();
      EXPECT_EQ(file.rfind(host + "-", 0), 0u) << file;
    }
  }
  // Nothing else in the job's directory: one directory per node.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(job_dir)) {
    EXPECT_TRUE(e.is_directory()) << e.path();
    ++entries;
  }
  EXPECT_EQ(entries, 2);
}

TEST(SimNodes, NodesThatDoNotDivideTheRanksAreRefused) {
  ScratchDir scratch;
  const ProcessResult sim = RunProcess({Cli(), "sim", "--ranks", "8", "--nodes", "3", "--scenario",
                                        ScenarioPath("healthy.json"), "--dir", scratch / "t"});
  EXPECT_EQ(sim.exit_code, 3);
  EXPECT_NE(sim.err.find("--nodes 3 does not split 8 ranks into equal nodes"), std::string::npos)
      << sim.err;
}

}  // namespace
}  // namespace ncclscope::testing
