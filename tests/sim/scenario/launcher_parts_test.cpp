// The launcher's pieces that need no emulator: output prefixing, rank environment, setup errors.
#include <gtest/gtest.h>

#include <signal.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <sstream>

#include "sim/scenario/launcher.h"
#include "sim/scenario/launcher_env.h"
#include "sim/scenario/line_prefixer.h"
#include "sim/scenario/rank_bootstrap.h"
#include "sim/scenario/rank_processes.h"
#include "tests/sim/scenario/env_lookup.h"

namespace ncclscope::sim {
namespace {

using testing::lookup;

TEST(LinePrefixer, PrefixesWholeLinesAcrossChunks) {
  std::ostringstream out;
  LinePrefixer p("[rank 3] ", out);
  p.feed("hel");
  EXPECT_EQ(out.str(), "");
  p.feed("lo\nwor");
  p.feed("ld\n\nlast");
  p.finish();
  EXPECT_EQ(out.str(), "[rank 3] hello\n[rank 3] world\n[rank 3] \n[rank 3] last\n");
}

TEST(LauncherEnv, SetsJobVariablesAndPrependsTheProbe) {
  JobEnv job{
      "abc", "sim-abc", "/tmp/t", "/tmp/run", "/x/libncclscope.so", 8, {{"NCCLSCOPE_LEVEL", "2"}},
      {}};
  char a[] = "LD_PRELOAD=/other.so";
  char b[] = "RANK=99";
  char c[] = "HOME=/root";
  char* base[] = {a, b, c, nullptr};
  const auto env = rankEnvironment(job, 5, base);
  EXPECT_EQ(lookup(env, "LD_PRELOAD"), "/x/libncclscope.so:/other.so");
  EXPECT_EQ(lookup(env, "RANK"), "5");
  EXPECT_EQ(lookup(env, "LOCAL_RANK"), "5");
  EXPECT_EQ(lookup(env, "WORLD_SIZE"), "8");
  EXPECT_EQ(lookup(env, "LOCAL_WORLD_SIZE"), "8");
  EXPECT_EQ(lookup(env, "NCCLSIM_JOB_TAG"), "abc");
  EXPECT_EQ(lookup(env, "NCCLSCOPE_JOB_ID"), "sim-abc");
  EXPECT_EQ(lookup(env, "NCCLSCOPE_DIR"), "/tmp/t");
  // The unique id is not in the trace directory, which may be unwritable or full.
  EXPECT_EQ(lookup(env, "NCCLSCOPE_SIM_RUN_DIR"), "/tmp/run");
  EXPECT_EQ(lookup(env, "NCCLSCOPE_LEVEL"), "2");
  EXPECT_EQ(lookup(env, "HOME"), "/root");
  job.probe.clear();
  EXPECT_EQ(lookup(rankEnvironment(job, 0, base), "LD_PRELOAD"), "/other.so");
}

TEST(LauncherEnv, TheProbeIsAlsoNcclsProfilerPluginUnlessTheUserChoseOne) {
  JobEnv job{"abc", "sim-abc", "/tmp/t", "/tmp/run", "/x/libncclscope.so", 2, {}, {}};
  char home[] = "HOME=/root";
  char* plain[] = {home, nullptr};
  EXPECT_EQ(lookup(rankEnvironment(job, 0, plain), "NCCL_PROFILER_PLUGIN"), "/x/libncclscope.so");
  char none[] = "NCCL_PROFILER_PLUGIN=none";
  char* chosen[] = {none, nullptr};
  EXPECT_EQ(lookup(rankEnvironment(job, 0, chosen), "NCCL_PROFILER_PLUGIN"), "none");
  job.probe.clear();
  EXPECT_EQ(lookup(rankEnvironment(job, 0, plain), "NCCL_PROFILER_PLUGIN"), "<unset>");
}

// A job id the caller set (NCCLSCOPE_JOB_ID) names the simulated job as it names a real one: its
// ring files' headers and node directories carry it, made a path component as the probe makes it.
TEST(LauncherEnv, TheJobIdIsTheCallersWhenSetElseNewForEachRun) {
  EXPECT_EQ(simJobId("abc", nullptr), "sim-abc");
  EXPECT_EQ(simJobId("abc", ""), "sim-abc");
  EXPECT_EQ(simJobId("abc", "job42"), "job42");
  EXPECT_EQ(simJobId("abc", "exp/7"), "exp_7");
}

// `ncclscope sim --nodes 2` on 8 ranks: ranks 4-7 are node1's, numbered 0-3 there, writing under
// their node's host name into their node's directory, as on a machine of their own.
TEST(LauncherEnv, SimulatedNodesGetTheirHostDirectoryAndLocalRanks) {
  JobEnv job{"abc", "sim-abc", "/tmp/t", "/tmp/run",
             "",    8,         {},       {"/tmp/t/sim-abc/node0", "/tmp/t/sim-abc/node1"}};
  char home[] = "HOME=/root";
  char* base[] = {home, nullptr};
  const auto r5 = rankEnvironment(job, 5, base);
  EXPECT_EQ(lookup(r5, "NCCLSCOPE_HOST"), "node1");
  EXPECT_EQ(lookup(r5, "NCCLSCOPE_DIR"), "/tmp/t/sim-abc/node1");
  EXPECT_EQ(lookup(r5, "RANK"), "5");
  EXPECT_EQ(lookup(r5, "LOCAL_RANK"), "1");
  EXPECT_EQ(lookup(r5, "LOCAL_WORLD_SIZE"), "4");
  const auto r3 = rankEnvironment(job, 3, base);
  EXPECT_EQ(lookup(r3, "NCCLSCOPE_HOST"), "node0");
  EXPECT_EQ(lookup(r3, "NCCLSCOPE_DIR"), "/tmp/t/sim-abc/node0");
  EXPECT_EQ(lookup(r3, "LOCAL_RANK"), "3");
  // Without nodes, nothing changes: one node, no host override.
  job.node_dirs.clear();
  EXPECT_EQ(lookup(rankEnvironment(job, 5, base), "NCCLSCOPE_HOST"), "<unset>");
  EXPECT_EQ(lookup(rankEnvironment(job, 5, base), "NCCLSCOPE_DIR"), "/tmp/t");
}

TEST(LauncherEnv, TagsAreUniqueAndShmSafe) {
  const std::string a = newJobTag();
  EXPECT_NE(a, newJobTag());
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos) << a;
  EXPECT_EQ(signalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(signalName(SIGSEGV), "SIGSEGV");
}

TEST(RankBootstrap, PublishedIdIsReadBackAndAMissingOneTimesOut) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string path = uniqueIdPath(dir, "test" + std::to_string(getpid()));
  ncclUniqueId id;
  std::memset(&id, 0x5a, sizeof id);
  std::string error;
  ASSERT_TRUE(publishUniqueId(path, id, error)) << error;
  ncclUniqueId got;
  ASSERT_TRUE(waitUniqueId(path, 1.0, got, error)) << error;
  EXPECT_EQ(std::memcmp(&got, &id, sizeof id), 0);
  std::filesystem::remove(path);
  EXPECT_FALSE(waitUniqueId(path, 0.1, got, error));
  EXPECT_NE(error.find("no unique id at " + path + " after 0.1 s"), std::string::npos) << error;
}

TEST(Launcher, SetupErrorsExitTwoWithAClearMessage) {
  std::ostringstream out;
  std::ostringstream err;
  SimOptions opt;
  opt.ranks = 4;
  opt.scenario = std::string(NCCLSCOPE_SCENARIOS_DIR) + "/no-such-file.json";
  EXPECT_EQ(runSim(opt, out, err), kSimSetupError);
  EXPECT_NE(err.str().find("no-such-file.json: cannot open the file"), std::string::npos)
      << err.str();

  err.str("");
  opt.scenario = std::string(NCCLSCOPE_SCENARIOS_DIR) + "/demo.json";
  EXPECT_EQ(runSim(opt, out, err), kSimSetupError);  // demo needs 8 ranks
  EXPECT_NE(err.str().find("min_ranks: this scenario needs at least 8 ranks"), std::string::npos)
      << err.str();

  err.str("");
  opt.ranks = 8;
  opt.rank_program = "/bin/true";
  opt.probe_path = "/nonexistent/libncclscope.so";
  EXPECT_EQ(runSim(opt, out, err), kSimSetupError);
  EXPECT_NE(err.str().find("probe library not found at /nonexistent/libncclscope.so"),
            std::string::npos)
      << err.str();

  err.str("");
  opt.rank_program = "/nonexistent/ncclscope-sim-rank";
  opt.probe = false;
  EXPECT_EQ(runSim(opt, out, err), kSimSetupError);
  EXPECT_NE(err.str().find("rank program not found"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace ncclscope::sim
