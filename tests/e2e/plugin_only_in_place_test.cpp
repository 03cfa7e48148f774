// In-place AlltoAll, Gather and Scatter without the interposer, end to end: `ncclscope sim
// --no-probe` with libncclscope.so as NCCL's profiler plugin (NCCL_PROFILER_PLUGIN) and NVTX
// injection (NVTX_INJECTION64_PATH), nothing preloaded.
//
// NCCL 2.28.9 appends every part of these calls (src/enqueue.cc taskAppend, one P2pApi each), but
// scheduleP2pTasksToPlan skips the send and receive to self of an in-place call ("Skip send to
// self in-place"): those two parts never launch. The recorder cannot tell an in-place call from
// its events, yet must still see it finish on the device (plugin/profiler/plugin_only_parts.cpp): a
// call left waiting for parts that never come reads as a device stall.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"
#include "tests/e2e/trace_consistency.h"

namespace ncclscope::testing {
namespace {

constexpr int kInPlaceRanks = 4;
constexpr double kTimeoutS = 30;

// Per repetition, on world: an in-place AlltoAll, an out-of-place one, an in-place Gather rooted
// at 1 and an in-place Scatter rooted at 2; on pairs an in-place AlltoAll.
constexpr const char* kInPlaceScenario = R"({
  "name": "plugin-only-in-place",
  "seed": 7,
  "min_ranks": 4,
  "repeat": 2,
  "communicators": [{"name": "pair", "split": {"by": "block", "size": 2}}],
  "steps": [
    {"name": "moe", "ops": [
      {"op": "alltoall", "count": 64, "dtype": "float32", "in_place": true},
      {"op": "alltoall", "count": 64, "dtype": "float32"},
      {"op": "alltoall", "comm": "pair", "count": 32, "dtype": "bfloat16", "in_place": true},
      {"op": "gather", "count": 32, "dtype": "int32", "root": 1, "in_place": true},
      {"op": "scatter", "count": 16, "dtype": "float64", "root": 2, "in_place": true}]}
  ]
})";

TEST(PluginOnlyInPlace, EveryInPlaceCallCompletesOnTheDevice) {
  ScratchDir scratch;
  const std::string scenario = scratch / "scenario.json";
  std::ofstream(scenario) << kInPlaceScenario;
  const std::string dir = scratch / "plugin";
  const std::map<std::string, std::string> env = {{"NCCLSCOPE_RING_RECORDS", "4096"},
                                                  {"NCCL_PROFILER_PLUGIN", ProbeLibrary()},
                                                  {"NVTX_INJECTION64_PATH", ProbeLibrary()},
                                                  {"LD_PRELOAD", ""}};
  const ProcessResult job =
      RunProcess({Cli(), "sim", "--no-probe", "--ranks", std::to_string(kInPlaceRanks),
                  "--scenario", scenario, "--dir", dir, "--timeout", std::to_string(kTimeoutS)},
                 env, kTimeoutS + 60);
  // Exit 0: every rank checked every in-place result where NCCL leaves it.
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err;

  const auto dumps = DumpJson(dir);
  ASSERT_EQ(static_cast<int>(dumps.size()), kInPlaceRanks);
  const std::set<std::string> parts = {"alltoall", "gather", "scatter"};
  for (int r = 0; r < kInPlaceRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    size_t calls = 0;
    for (const auto& rec : dumps.at(r).records) {
      const std::string op = rec.at("op");
      EXPECT_TRUE(op != "send" && op != "recv") << "the job called no send or receive";
      if (parts.count(op) == 0) continue;
      ++calls;
      EXPECT_EQ(rec.at("device"), "done") << rec.dump();
    }
    EXPECT_EQ(calls, 10u) << "2 x (two world AlltoAlls, one pair AlltoAll, Gather, Scatter)";
  }
  ExpectCollectivesAgree(dumps);
}

}  // namespace
}  // namespace ncclscope::testing
