// A reduction-op desync without the interposer, end to end: `ncclscope sim --no-probe` with
// libncclscope.so as NCCL's profiler plugin (NCCL_PROFILER_PLUGIN) and, by the same path, as the
// NVTX injection (NVTX_INJECTION64_PATH, as `ncclscope run` sets it), nothing preloaded: the
// setup of a job whose NCCL is linked statically. No profiler event carries the op; the emulated
// NCCL pushes NCCL 2.28.9's NVTX range around each call (sim/emulator/nvtx_ranges.h; NCCL's
// src/collectives.cc ncclAllReduce, NVTX3_FUNC_WITH_PARAMS in src/include/nvtx.h), whose payload
// the plugin-only records take it from (docs/nvtx.md). With NCCL_NVTX_DISABLE=1 NCCL pushes no
// range, so the same job is no desync: the verdict comes from the ranges alone.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"

namespace ncclscope::testing {
namespace {

// Rank 3's dp allreduce #2 uses max where the others sum; the launcher ends the hung job after
// kKillAfterS.

nlohmann::json PluginOnlyVerdicts(const std::string& dir,
                                  const std::map<std::string, std::string>& more_env) {
  std::map<std::string, std::string> env = {{"NCCL_PROFILER_PLUGIN", ProbeLibrary()},
                                            {"NVTX_INJECTION64_PATH", ProbeLibrary()},
                                            {"LD_PRELOAD", ""},
                                            {"NCCLSCOPE_RING_RECORDS", "4096"}};
  for (const auto& [k, v] : more_env) env[k] = v;
  const ProcessResult sim = RunProcess(
      {Cli(), "sim", "--no-probe", "--ranks", "8", "--scenario", ScenarioPath("wrong-redop.json"),
       "--dir", dir, "--timeout", std::to_string(kKillAfterS)},
      env, kKillAfterS + 60);
  EXPECT_NE(sim.exit_code, 0) << "a desynced job cannot finish\n" << sim.err;
  const ProcessResult a = RunProcess({Cli(), "analyze", dir, "--json"}, {}, 120);
  nlohmann::json j = nlohmann::json::parse(a.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << a.out << a.err;
  return j;
}

TEST(PluginOnlyNvtx, WrongRedopIsTheInterposersDesyncFromNcclsRanges) {
  ScratchDir dir;
  const nlohmann::json j = PluginOnlyVerdicts(dir / "trace", {});
  SCOPED_TRACE(j.dump(2));
  ASSERT_TRUE(j.is_object());
  ASSERT_FALSE(j["verdicts"].empty());
  const nlohmann::json& v = j["verdicts"][0];
  // As with the interposer (analyze_scenarios_test.cpp: wrong-redop).
  EXPECT_EQ(v["class"], "desync");
  EXPECT_EQ(v["comm_name"], "dp");
  EXPECT_EQ(v["seq"], 2);
  EXPECT_EQ(v["culprits"], nlohmann::json::array({3}));
  EXPECT_NE(v["summary"].get<std::string>().find("redop sum vs max"), std::string::npos);
}

TEST(PluginOnlyNvtx, WithoutNcclsRangesTheOpIsUnknownAndNoDesync) {
  ScratchDir dir;
  const nlohmann::json j = PluginOnlyVerdicts(dir / "trace", {{"NCCL_NVTX_DISABLE", "1"}});
  SCOPED_TRACE(j.dump(2));
  ASSERT_TRUE(j.is_object());
  for (const auto& v : j["verdicts"]) EXPECT_NE(v["class"], "desync");
}

}  // namespace
}  // namespace ncclscope::testing
