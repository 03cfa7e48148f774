// Where a device stall is stuck, without the interposer, end to end: `ncclscope sim --no-probe`
// with libncclscope.so loaded only as NCCL's profiler plugin (NCCL_PROFILER_PLUGIN, nothing
// preloaded: the setup of a job whose NCCL is linked statically) and its proxy detail always on
// (NCCLSCOPE_PROFILER_PROXY=always). The plugin-only recorder follows NCCL's proxy progress as the
// interposed mode does (plugin/profiler/profiler_events.cpp), so `ncclscope analyze` names the same
// stage the interposed run gets (stall_stage_e2e_test.cpp): a hung link's sends are never taken,
// so they wait on the network (SendWait) for seconds, across the probe's background ticks. A
// healthy job with the same detail on gets no verdict.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/stall_stage_verdicts.h"
#include "tests/e2e/subprocess.h"

namespace ncclscope::testing {
namespace {

// The fault strikes at step 2; the launcher ends the hung job after kKillAfterS.

struct JobResult {  // NOLINT(bugprone-exception-escape): a false positive on nlohmann::json members
  int sim_exit = -1;
  std::string sim_err;
  nlohmann::json json;
  int analyze_exit = -1;
};

JobResult PluginOnly(const std::string& scenario, const std::string& dir, double timeout_s,
                     const std::map<std::string, std::string>& more_env = {}) {
  std::map<std::string, std::string> env = {{"NCCL_PROFILER_PLUGIN", ProbeLibrary()},
                                            {"LD_PRELOAD", ""},
                                            {"NCCLSCOPE_PROFILER_PROXY", "always"},
                                            {"NCCLSCOPE_RING_RECORDS", "4096"}};
  for (const auto& [k, v] : more_env) env[k] = v;
  JobResult r;
  const ProcessResult sim =
      RunProcess({Cli(), "sim", "--no-probe", "--ranks", "8", "--scenario", ScenarioPath(scenario),
                  "--dir", dir, "--timeout", std::to_string(timeout_s)},
                 env, timeout_s + 60);
  r.sim_exit = sim.exit_code;
  r.sim_err = sim.err;
  const ProcessResult a = RunProcess({Cli(), "analyze", dir, "--json"}, {}, 120);
  r.analyze_exit = a.exit_code;
  r.json = nlohmann::json::parse(a.out, nullptr, false);
  EXPECT_FALSE(r.json.is_discarded()) << a.out << a.err;
  return r;
}

TEST(PluginOnlyStallStage, HungLinkIsTheNetworkBetweenItsRankAndPeerAsWhenInterposed) {
  ScratchDir dir;
  const JobResult r = PluginOnly("hung-link.json", dir / "trace", kKillAfterS);
  EXPECT_NE(r.sim_exit, 0) << "a job whose link hung cannot finish";
  EXPECT_NE(r.sim_err.find("injecting hung_link at step 2"), std::string::npos) << r.sim_err;
  SCOPED_TRACE(r.json.dump(2));
  EXPECT_EQ(r.analyze_exit, 2);
  ASSERT_FALSE(r.json["verdicts"].empty());
  EXPECT_EQ(r.json["verdicts"][0]["stall"]["stage"], "network");
  EXPECT_EQ(r.json["verdicts"][0]["stall"]["rank"], 1);

  // As in the interposed run: rank 1's tp allreduce of step 2 (tp #3) with its partner 0, stuck
  // sending on the dead port.
  const nlohmann::json* tp = VerdictOf(r.json, "tp", "allreduce", 3);
  ASSERT_NE(tp, nullptr);
  EXPECT_EQ((*tp)["class"], "device-stall");
  EXPECT_EQ((*tp)["culprits"], nlohmann::json::array({0, 1}));  // the two ends of the link
  const nlohmann::json& s = (*tp)["stall"];
  EXPECT_EQ(s["stage"], "network");
  EXPECT_EQ(s["rank"], 1);
  EXPECT_EQ(s["peer"], 0);
  EXPECT_EQ(s["side"], "send");
  const int channel = s["channel"].get<int>();
  EXPECT_TRUE(channel >= 0 && channel < kChannels) << channel;
  const std::string summary = (*tp)["summary"];
  EXPECT_NE(summary.find("rank 1's send to rank 0 on channel " + std::to_string(channel)),
            std::string::npos)
      << summary;
}

// Slow world allreduces (healthy-large-op.json) and a 10 ms heartbeat: operations are in flight
// across the background thread's ticks, so their proxy progress is published while they move;
// none of it reads as a stall.
TEST(PluginOnlyStallStage, HealthyJobWithProxyDetailHasNoVerdict) {
  ScratchDir dir;
  const JobResult r =
      PluginOnly("healthy-large-op.json", dir / "trace", 60, {{"NCCLSCOPE_HEARTBEAT_MS", "10"}});
  ASSERT_EQ(r.sim_exit, 0) << r.sim_err;
  SCOPED_TRACE(r.json.dump(2));
  EXPECT_EQ(r.analyze_exit, 0);
  EXPECT_EQ(r.json["stage"], "healthy");
  for (const auto& v : r.json["verdicts"]) {
    EXPECT_EQ(v["class"], "healthy");
    EXPECT_FALSE(v.contains("stall")) << v.dump();
  }
}

}  // namespace
}  // namespace ncclscope::testing
