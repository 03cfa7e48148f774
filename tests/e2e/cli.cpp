#include "tests/e2e/cli.h"

#include <gtest/gtest.h>

#include "tests/e2e/e2e_env.h"

namespace ncclscope::testing {

ProcessResult RunSim(const std::string& scenario, int ranks, const std::string& dir,
                     double timeout_s, const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> all = {{"NCCLSCOPE_RING_RECORDS", "4096"}};
  for (const auto& [k, v] : env) all[k] = v;
  // The launcher's own timeout fires first; ours only guards against a launcher that hangs.
  return RunProcess({Cli(), "sim", "--ranks", std::to_string(ranks), "--scenario",
                     ScenarioPath(scenario), "--dir", dir, "--timeout", std::to_string(timeout_s)},
                    all, timeout_s + 30);
}

std::map<int, RankDump> DumpJson(const std::string& dir) {
  const ProcessResult p = RunProcess({Cli(), "dump", dir, "--json"}, {}, 60);
  EXPECT_EQ(p.exit_code, 0) << "ncclscope dump " << dir << " --json\n" << p.err;
  return ParseDump(p.out);
}

}  // namespace ncclscope::testing
