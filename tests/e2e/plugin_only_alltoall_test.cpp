// AlltoAll, Gather and Scatter without the interposer, end to end: `ncclscope sim --no-probe`
// with libncclscope.so as NCCL's profiler plugin (NCCL_PROFILER_PLUGIN) and as the NVTX injection
// (NVTX_INJECTION64_PATH), nothing preloaded, against the same job with the probe preloaded.
//
// NCCL 2.28.9 runs these three as point-to-point parts (src/enqueue.cc, taskAppend: one
// p2pTaskAppend per peer and direction, each its own P2pApi event named "Send"/"Recv"), so the
// profiler never sees the call itself. NCCL's own NVTX range around the call (src/collectives.cc,
// ncclAlltoAll / ncclGather / ncclScatter: NVTX3_FUNC_WITH_PARAMS) names it, and the plugin-only
// recorder groups the parts back into one record (plugin/profiler/plugin_only_parts.cpp). What a
// user must see: the interposer's records (one per call, same sequence numbers, op, count, dtype,
// root), no send or receive that the job never called, and hang verdicts that name the call and the
// culprit as the interposer's do.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/op_kinds.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"
#include "tests/e2e/trace_consistency.h"

namespace ncclscope::testing {
namespace {

constexpr int kAlltoallRanks = 4;

// Two repetitions of: an AlltoAll on world and on pairs, an AllReduce between (numbered with them
// on world), a Gather rooted at 1, a Scatter rooted at 2. World collectives per repetition:
// alltoall, allreduce, gather, scatter, so repetition 2 holds world #5..#8. Global steps: 0 and 2
// are "moe", 1 and 3 are "collect".
std::string Scenario(const std::string& faults) {
  return R"({
  "name": "plugin-only-alltoall",
  "seed": 5,
  "min_ranks": 4,
  "repeat": 2,
  "compute": {"ms": 1},
  "communicators": [{"name": "pair", "split": {"by": "block", "size": 2}}],
  "steps": [
    {"name": "moe", "ops": [
      {"op": "alltoall", "count": 64, "dtype": "float32"},
      {"op": "alltoall", "comm": "pair", "count": 32, "dtype": "bfloat16"},
      {"op": "allreduce", "count": 128, "dtype": "float32"}]},
    {"name": "collect", "ops": [
      {"op": "gather", "count": 32, "dtype": "int32", "root": 1},
      {"op": "scatter", "count": 16, "dtype": "float64", "root": 2}]}
  ],
  "faults": [)" +
         faults + "]\n}\n";
}

std::string WriteScenario(const ScratchDir& scratch, const std::string& faults) {
  std::string path = scratch / "scenario.json";
  std::ofstream(path) << Scenario(faults);
  return path;
}

// `ncclscope sim` of the scenario, interposed (the probe preloaded, as `ncclscope sim` does) or
// plugin-only (the profiler plugin and NVTX injection alone).
ProcessResult RunJob(const std::string& scenario, const std::string& dir, bool plugin_only) {
  std::map<std::string, std::string> env = {{"NCCLSCOPE_RING_RECORDS", "4096"}};
  std::vector<std::string> argv = {Cli(), "sim"};
  if (plugin_only) {
    argv.emplace_back("--no-probe");
    env["NCCL_PROFILER_PLUGIN"] = ProbeLibrary();
    env["NVTX_INJECTION64_PATH"] = ProbeLibrary();
    env["LD_PRELOAD"] = "";
  }
  for (const std::string& a :
       {std::string("--ranks"), std::to_string(kAlltoallRanks), std::string("--scenario"), scenario,
        std::string("--dir"), dir, std::string("--timeout"), std::to_string(kKillAfterS)}) {
    argv.push_back(a);
  }
  return RunProcess(argv, env, kKillAfterS + 60);
}

nlohmann::json AnalyzePluginOnly(const std::string& dir) {
  const ProcessResult a = RunProcess({Cli(), "analyze", dir, "--json"}, {}, 120);
  nlohmann::json j = nlohmann::json::parse(a.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << a.out << a.err;
  return j;
}

const std::set<std::string> kParts = {"alltoall", "gather", "scatter"};

// What identifies a call across the two runs: communicator ids differ (the interposer derives
// them from the unique id, plugin-only takes NCCL's commHash), their names do not.
using Signature = std::tuple<std::string, std::string, uint64_t, uint64_t, std::string, int>;

std::vector<Signature> CollectivesOf(const RankDump& d) {
  std::vector<Signature> out;
  for (const auto& r : d.records) {
    if (kCollectives.count(r.at("op")) == 0) continue;
    out.emplace_back(r.at("comm_name").get<std::string>(), r.at("op").get<std::string>(),
                     r.at("seq").get<uint64_t>(), r.at("count").get<uint64_t>(),
                     r.at("dtype").get<std::string>(), r.at("peer").get<int>());
  }
  return out;
}

size_t CountOps(const RankDump& d, const std::set<std::string>& ops) {
  size_t n = 0;
  for (const auto& r : d.records) n += ops.count(r.at("op"));
  return n;
}

TEST(PluginOnlyAlltoAll, OneRecordPerCallAsTheInterposerRecordsIt) {
  ScratchDir scratch;
  const std::string scenario = WriteScenario(scratch, "");
  const ProcessResult interposed = RunJob(scenario, scratch / "interposed", false);
  ASSERT_EQ(interposed.exit_code, 0) << interposed.out << interposed.err;
  const ProcessResult plugin = RunJob(scenario, scratch / "plugin", true);
  // Exit 0: every rank checked every result, so the plugin disturbed nothing.
  ASSERT_EQ(plugin.exit_code, 0) << plugin.out << plugin.err;

  const auto want = DumpJson(scratch / "interposed");
  const auto got = DumpJson(scratch / "plugin");
  ASSERT_EQ(static_cast<int>(want.size()), kAlltoallRanks);
  ASSERT_EQ(static_cast<int>(got.size()), kAlltoallRanks);
  for (int r = 0; r < kAlltoallRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankDump& d = got.at(r);
    const std::vector<Signature> calls = CollectivesOf(d);
    // world: 2 x (alltoall, allreduce, gather, scatter); pair: 2 alltoalls.
    EXPECT_EQ(calls.size(), 10u);
    EXPECT_EQ(calls, CollectivesOf(want.at(r)));
    EXPECT_EQ(CountOps(d, kParts), 8u) << "one record per call, not per part";
    EXPECT_EQ(CountOps(d, {"send", "recv"}), 0u) << "the job called no send or receive";
    for (const auto& rec : d.records) {
      // After a clean exit every part of every call completed on the device.
      if (kParts.count(rec.at("op")) != 0) {
        EXPECT_EQ(rec.at("device"), "done") << rec.dump();
      }
    }
    // One device start per call, under its number (the parts' kernels start several times).
    std::multiset<std::pair<std::string, uint64_t>> starts;
    std::multiset<std::pair<std::string, uint64_t>> calls_by_id;
    const auto key = [](const nlohmann::json& rec) {
      return std::make_pair(rec.at("comm_id").get<std::string>(), rec.at("seq").get<uint64_t>());
    };
    for (const auto& rec : d.profiler_records) {
      if (rec.at("op") == "device_start") starts.insert(key(rec));
    }
    for (const auto& rec : d.records) {
      if (kCollectives.count(rec.at("op")) != 0) calls_by_id.insert(key(rec));
    }
    EXPECT_EQ(starts, calls_by_id);
  }
  // Consecutive sequence numbers per communicator, the same call at each on every member.
  ExpectCollectivesAgree(got);
  const nlohmann::json j = AnalyzePluginOnly(scratch / "plugin");
  SCOPED_TRACE(j.dump(2));
  ASSERT_TRUE(j.is_object());
  for (const auto& v : j["verdicts"]) {
    EXPECT_TRUE(v["class"] == "healthy" || v["class"] == "straggler") << v["class"];
  }
}

struct FaultCase {
  const char* name;
  const char* fault;
  const char* cls;
  const char* op;
  uint64_t seq;  // on world
  int culprit;
};

class PluginOnlyAlltoAllFault : public ::testing::TestWithParam<FaultCase> {};

TEST_P(PluginOnlyAlltoAllFault, VerdictNamesTheCallAndCulpritAsTheInterposers) {
  const FaultCase& c = GetParam();
  ScratchDir scratch;
  const std::string scenario = WriteScenario(scratch, c.fault);
  const ProcessResult interposed = RunJob(scenario, scratch / "interposed", false);
  EXPECT_NE(interposed.exit_code, 0) << "a hung job cannot finish\n" << interposed.err;
  const ProcessResult plugin = RunJob(scenario, scratch / "plugin", true);
  EXPECT_NE(plugin.exit_code, 0) << "a hung job cannot finish\n" << plugin.err;
  const nlohmann::json want = AnalyzePluginOnly(scratch / "interposed");
  const nlohmann::json got = AnalyzePluginOnly(scratch / "plugin");
  SCOPED_TRACE("interposed: " + want.dump(2));
  SCOPED_TRACE("plugin-only: " + got.dump(2));
  ASSERT_TRUE(want.is_object() && got.is_object());
  ASSERT_FALSE(want["verdicts"].empty());
  ASSERT_FALSE(got["verdicts"].empty());
  for (const nlohmann::json* j : {&want, &got}) {
    const nlohmann::json& v = (*j)["verdicts"][0];
    EXPECT_EQ(v["class"], c.cls);
    EXPECT_EQ(v["comm_name"], "world");
    EXPECT_EQ(v["op"], c.op);
    EXPECT_EQ(v["seq"], c.seq);
    EXPECT_EQ(v["culprits"], nlohmann::json::array({c.culprit}));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Faults, PluginOnlyAlltoAllFault,
    ::testing::Values(
        // Rank 2 passes twice the count to the second world AlltoAll (world #5).
        FaultCase{"AlltoAllWrongCount",
                  R"({"kind": "wrong_count", "ranks": [2], "step": 2, "op": 0, "count": 128})",
                  "desync", "alltoall", 5, 2},
        // Rank 3 never calls the second Gather (world #7): the root waits for its part.
        FaultCase{"GatherNeverCalled",
                  R"({"kind": "stuck_before", "ranks": [3], "step": 3, "op": 0})", "missing",
                  "gather", 7, 3},
        // The root of the second Scatter (world #8) never calls it: every rank waits for it.
        FaultCase{"ScatterRootNeverCalls",
                  R"({"kind": "stuck_before", "ranks": [2], "step": 3, "op": 1})", "missing",
                  "scatter", 8, 2}),
    [](const ::testing::TestParamInfo<FaultCase>& info) { return info.param.name; });

}  // namespace
}  // namespace ncclscope::testing
