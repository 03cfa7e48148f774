// NCCLSCOPE_ACCEL end to end on the emulator (docs/collectives.md): an 8-rank job whose eligible
// AllReduces (one node, fp16/bf16/fp32 sum, whole 16-byte packs, within the staging buffer, outside
// groups) and AlltoAlls (whole packs per peer, any data type) run on ncclscope's own kernels — the
// emulated driver runs their CPU twins over the ranks' shared device memory — and whose other
// AllReduces reach NCCL. What a user must see: every rank's every result checked correct by the
// scenario runner, each record saying which engine ran it, the same engine for the same call on
// every rank, sequence numbers unbroken, no verdict.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/trace_consistency.h"

namespace ncclscope::testing {
namespace {

constexpr int kAllreduceRanks = 8;

// Per iteration, world's AllReduces in order, then tp's; the comment is where each must go.
constexpr const char* kAllreduceScenario = R"({
  "name": "accel-allreduce",
  "seed": 3,
  "min_ranks": 4,
  "repeat": 3,
  "communicators": [{"name": "tp", "split": {"by": "block", "size": 2}}],
  "steps": [{"name": "all", "ops": [
    {"op": "allreduce", "comm": "world", "count": 4096, "dtype": "float32"},
    {"op": "allreduce", "comm": "world", "count": 262168, "dtype": "bfloat16"},
    {"op": "allreduce", "comm": "world", "count": 1001, "dtype": "float16"},
    {"op": "allreduce", "comm": "world", "count": 4096, "dtype": "int32"},
    {"op": "allreduce", "comm": "world", "count": 4096, "dtype": "float32", "redop": "max"},
    {"op": "allreduce", "comm": "world", "count": 300000, "dtype": "float32"},
    {"op": "allreduce", "comm": "tp", "count": 2048, "dtype": "bfloat16"},
    {"op": "alltoall", "comm": "world", "count": 1024, "dtype": "float32"},
    {"op": "alltoall", "comm": "world", "count": 3, "dtype": "bfloat16"},
    {"op": "alltoall", "comm": "tp", "count": 4096, "dtype": "int8"}
  ]}]
})";
// world's calls of one iteration: one-shot fp32; two-shot bf16 (512 KiB + 48 bytes); 2002 bytes,
// not whole packs; int32; max; 1.2 MB, past the 1 MiB buffer. tp: one-shot bf16 at 2 ranks.
// AlltoAll (pull, any data type): world's 4 KiB per peer and tp's int8 blocks are ours; world's
// 6-byte blocks are not whole packs.
const std::vector<std::string> kWorldEngines = {"ncclscope", "ncclscope", "nccl",
                                                "nccl",      "nccl",      "nccl"};
const std::vector<std::string> kWorldAlltoAllEngines = {"ncclscope", "nccl"};

TEST(AccelAllReduce, EligibleCallsRunOnNcclscopesKernelsAndEveryResultIsRight) {
  ScratchDir scratch;
  const std::string scenario = scratch / "accel.json";
  std::ofstream(scenario) << kAllreduceScenario;
  const std::string dir = scratch / "trace";
  const ProcessResult sim =
      RunProcess({Cli(), "sim", "--ranks", std::to_string(kAllreduceRanks), "--scenario", scenario,
                  "--dir", dir, "--timeout", "60"},
                 {{"NCCLSCOPE_ACCEL", "1"}, {"NCCLSCOPE_ACCEL_BUFFER", "1m"}}, 120);
  // Exit 0: every rank checked every result against the reference.
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  EXPECT_EQ(sim.err.find("ncclscope: warning:"), std::string::npos) << sim.err;
  const auto dump = DumpJson(dir);
  ASSERT_EQ(static_cast<int>(dump.size()), kAllreduceRanks);
  for (const auto& [rank, d] : dump) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    // Per communicator, the calls of one iteration in order: world 6 AllReduces then 2 AlltoAlls,
    // tp one AllReduce then one AlltoAll; sequence numbers count them all.
    std::map<std::string, int> routed;
    for (const auto& rec : d.records) {
      const std::string op = rec.at("op");
      if (op != "allreduce" && op != "alltoall") continue;
      const std::string comm = rec.at("comm_name");
      const auto seq = rec.at("seq").get<uint64_t>();
      std::string want = "ncclscope";  // tp: both calls
      if (comm == "world") {
        const auto k = static_cast<size_t>((seq - 1) % 8);
        want = k < 6 ? kWorldEngines[k] : kWorldAlltoAllEngines[k - 6];
        EXPECT_EQ(op, k < 6 ? "allreduce" : "alltoall") << rec.dump();
      }
      EXPECT_EQ(rec.at("engine"), want) << rec.dump();
      EXPECT_EQ(rec.at("device"), "done") << rec.dump();
      routed[comm + " " + op] += rec.at("engine") == "ncclscope";
    }
    EXPECT_EQ(routed["world allreduce"], 2 * 3);
    EXPECT_EQ(routed["world alltoall"], 3);
    EXPECT_EQ(routed["tp allreduce"], 3);
    EXPECT_EQ(routed["tp alltoall"], 3);
  }
  ExpectCollectivesAgree(dump);
  const ProcessResult analyze = RunProcess({Cli(), "analyze", dir}, {}, 60);
  EXPECT_EQ(analyze.exit_code, 0) << analyze.out << analyze.err;
}

// A rank that never issues an accelerated AllReduce: the others' kernels give up after
// NCCLSCOPE_ACCEL_TIMEOUT_MS instead of waiting forever, each of those ranks says so in one line
// and records an accel_stall record naming the rank it waited for and the call. (The job itself
// then waits in NCCL for the missing rank, as it would without ncclscope, until `sim --timeout`.)
TEST(AccelAllReduce, ARankThatNeverArrivesEndsTheKernelsAndIsRecorded) {
  ScratchDir scratch;
  const std::string scenario = scratch / "stuck.json";
  std::ofstream(scenario) << R"({
    "name": "accel-stuck", "seed": 5, "min_ranks": 4, "repeat": 3,
    "steps": [{"name": "all", "ops": [
      {"op": "allreduce", "comm": "world", "count": 4096, "dtype": "float32"}]}],
    "faults": [{"kind": "stuck_before", "ranks": [3], "step": 1, "op": 0}]
  })";
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunProcess(
      {Cli(), "sim", "--ranks", "4", "--scenario", scenario, "--dir", dir, "--timeout", "10"},
      {{"NCCLSCOPE_ACCEL", "1"}, {"NCCLSCOPE_ACCEL_TIMEOUT_MS", "2000"}}, 120);
  EXPECT_NE(sim.exit_code, 0) << sim.out << sim.err;
  const auto dump = DumpJson(dir);
  ASSERT_EQ(dump.size(), 4u);
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_NE(sim.err.find("[rank " + std::to_string(r) +
                           "] ncclscope: warning: NCCLSCOPE_ACCEL: collective #2 on communicator "
                           "world ended without its peer: rank " +
                           std::to_string(r) + " waited for rank 3 at the start barrier"),
              std::string::npos)
        << sim.err;
    int stalls = 0;
    for (const auto& rec : dump.at(r).records) {
      if (rec.at("op") != "accel_stall") continue;
      ++stalls;
      EXPECT_EQ(rec.at("seq"), 2);
      EXPECT_EQ(rec.at("waited_for"), 3);
      EXPECT_EQ(rec.at("barrier"), "start");
    }
    EXPECT_EQ(stalls, 1);
  }
}

// A healthy job where one rank pauses 11 s (a checkpoint, a slow data loader) before an
// accelerated AllReduce the others already wait in, with the defaults: the kernels outlast the
// pause (the 10 s timeout this library first shipped would have ended them with undefined
// results), every result is right, and nothing is warned or recorded.
TEST(AccelAllReduce, AHealthyPauseLongerThanTenSecondsStaysQuietAndCorrect) {
  ScratchDir scratch;
  const std::string scenario = scratch / "pause.json";
  std::ofstream(scenario) << R"({
    "name": "accel-pause", "seed": 9, "min_ranks": 4, "repeat": 1,
    "steps": [
      {"name": "before", "ops": [
        {"op": "allreduce", "comm": "world", "count": 4096, "dtype": "float32"}]},
      {"name": "checkpoint", "compute": {"ms": 1, "per_rank": {"3": 11000}}, "ops": [
        {"op": "allreduce", "comm": "world", "count": 4096, "dtype": "float32"}]}]
  })";
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunProcess(
      {Cli(), "sim", "--ranks", "4", "--scenario", scenario, "--dir", dir, "--timeout", "60"},
      {{"NCCLSCOPE_ACCEL", "1"}}, 120);
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  EXPECT_EQ(sim.err.find("ncclscope: warning:"), std::string::npos) << sim.err;
  const auto dump = DumpJson(dir);
  ASSERT_EQ(dump.size(), 4u);
  for (const auto& [rank, d] : dump) {
    int routed = 0;
    for (const auto& rec : d.records) {
      EXPECT_NE(rec.at("op"), "accel_stall") << rec.dump();
      routed += rec.at("op") == "allreduce" && rec.at("engine") == "ncclscope";
    }
    EXPECT_EQ(routed, 2) << "rank " << rank;
  }
}

// Calls issued while their stream is captured into a CUDA graph (the scenario's "captured": the
// rank begins capture before the call and ends it after) reach NCCL, the same calls uncaptured run
// on ncclscope's kernels; every rank judges alike, every result is right (docs/collectives.md,
// "Stream capture").
TEST(AccelAllReduce, CallsUnderStreamCaptureGoToNccl) {
  ScratchDir scratch;
  const std::string scenario = scratch / "captured.json";
  std::ofstream(scenario) << R"({"name": "captured", "seed": 5, "repeat": 2, "steps": [{"ops": [
    {"op": "allreduce", "count": 4096, "dtype": "bfloat16"},
    {"op": "allreduce", "count": 4096, "dtype": "bfloat16", "captured": true},
    {"op": "alltoall", "count": 1024, "dtype": "float32", "captured": true},
    {"op": "alltoall", "count": 1024, "dtype": "float32"}]}]})";
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunProcess(
      {Cli(), "sim", "--ranks", "4", "--scenario", scenario, "--dir", dir, "--timeout", "60"},
      {{"NCCLSCOPE_ACCEL", "1"}}, 120);
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  EXPECT_NE(sim.out.find("all 4 ranks finished with correct results"), std::string::npos)
      << sim.out;
  const auto dump = DumpJson(dir);
  ASSERT_EQ(dump.size(), 4u);
  const std::vector<std::string> want = {"ncclscope", "nccl", "nccl", "ncclscope"};
  for (const auto& [rank, d] : dump) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    int seen = 0;
    for (const auto& rec : d.records) {
      const std::string op = rec.at("op");
      if (op != "allreduce" && op != "alltoall") continue;
      const auto seq = rec.at("seq").get<uint64_t>();
      EXPECT_EQ(rec.at("engine"), want[(seq - 1) % 4]) << rec.dump();
      EXPECT_EQ(rec.at("device"), "done") << rec.dump();
      ++seen;
    }
    EXPECT_EQ(seen, 8);
  }
  ExpectCollectivesAgree(dump);
}

}  // namespace
}  // namespace ncclscope::testing
