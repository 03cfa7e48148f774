// NCCLSCOPE_ACCEL for grouped sends and receives end to end on the emulator (docs/collectives.md,
// "Grouped sends and receives"): pipeline stages' ncclSend/ncclRecv in one ncclGroupStart/End run
// on ncclscope's exchange kernel (the emulated driver runs its CPU twin over the ranks' shared
// device memory), in one chunk or many, while the parts that are not whole 16-byte packs reach
// NCCL in the same group, on communicators set up at their creation, including one that never
// makes any other call. What a user must see: every result checked right by the scenario runner,
// each record saying which engine ran it, the same engine on both sides of every pair, the job
// healthy; and a stage that never arrives ends its peer's wait with one warning and a record
// instead of a hang in ncclscope's kernel.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"

namespace ncclscope::testing {
namespace {

constexpr int kExchangeRanks = 4;

// world: an AllReduce, then per iteration four grouped pipelines: 4 KiB forward (one chunk),
// 1.2 MB backward (five 256 KiB chunks), 8200 bytes exchanged between pairs (not whole packs:
// NCCL), 12 bytes forward (NCCL). pp, a copy of world split off, only ever carries a 4 KiB
// pipeline: set up at its creation (as an expert-parallel communicator that only runs grouped
// all-to-alls), its parts run on the exchange too.
constexpr const char* kExchangeScenario = R"({
  "name": "accel-exchange",
  "seed": 5,
  "min_ranks": 2,
  "repeat": 3,
  "communicators": [{"name": "pp", "split": {"by": "block", "size": 4}}],
  "steps": [
    {"name": "setup", "ops": [{"op": "allreduce", "count": 1024, "dtype": "float32"}]},
    {"name": "pp", "ops": [
      {"op": "pipeline", "count": 1024, "dtype": "float32"},
      {"op": "pipeline", "count": 300000, "dtype": "float32", "direction": "backward"},
      {"op": "pipeline", "count": 4100, "dtype": "bfloat16", "direction": "exchange"},
      {"op": "pipeline", "count": 3, "dtype": "float32"},
      {"op": "pipeline", "comm": "pp", "count": 1024, "dtype": "float32"}
    ]}
  ]
})";

std::string Engine(const std::string& /*comm*/, uint64_t count) {
  return count == 1024 || count == 300000 ? "ncclscope" : "nccl";
}

// Checks every send and receive record of the job: the engine `want` says for its communicator and
// count, its device work done, inside a group; and both sides of every pair (numbered alike) on
// the same engine. Returns how many records ran on ncclscope's exchange.
int ExpectSendsAndReceives(const std::map<int, RankDump>& dump,
                           const std::function<std::string(const std::string&, uint64_t)>& want) {
  // (comm, sender, receiver, seq) -> engine, as the sender and as the receiver recorded it.
  std::map<std::tuple<std::string, int, int, uint64_t>, std::string> by_sender, by_receiver;
  int routed = 0;
  for (const auto& [rank, d] : dump) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    for (const auto& rec : d.records) {
      const std::string op = rec.at("op");
      if (op != "send" && op != "recv") continue;
      const std::string comm = rec.at("comm_name");
      EXPECT_EQ(rec.at("engine"), want(comm, rec.at("count").get<uint64_t>())) << rec.dump();
      EXPECT_EQ(rec.at("device"), "done") << rec.dump();
      EXPECT_TRUE(rec.at("in_group").get<bool>()) << rec.dump();
      const int peer = rec.at("peer").get<int>();
      const auto seq = rec.at("seq").get<uint64_t>();
      (op == "send" ? by_sender[{comm, rank, peer, seq}] : by_receiver[{comm, peer, rank, seq}]) =
          rec.at("engine");
      routed += rec.at("engine") == "ncclscope";
    }
  }
  EXPECT_EQ(by_sender, by_receiver);
  return routed;
}

TEST(AccelExchange, GroupedSendsAndReceivesRunOnTheExchangeAndEveryResultIsRight) {
  ScratchDir scratch;
  const std::string scenario = scratch / "exchange.json";
  std::ofstream(scenario) << kExchangeScenario;
  const std::string dir = scratch / "trace";
  const ProcessResult sim =
      RunProcess({Cli(), "sim", "--ranks", std::to_string(kExchangeRanks), "--scenario", scenario,
                  "--dir", dir, "--timeout", "60"},
                 {{"NCCLSCOPE_ACCEL", "1"}, {"NCCLSCOPE_ACCEL_BUFFER", "4m"}}, 120);
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;  // every result checked
  EXPECT_EQ(sim.err.find("ncclscope: warning:"), std::string::npos) << sim.err;
  const auto dump = DumpJson(dir);
  ASSERT_EQ(static_cast<int>(dump.size()), kExchangeRanks);
  // Both sides of every send/receive pair, numbered alike, ran on the same engine.
  const int routed = ExpectSendsAndReceives(dump, Engine);
  // world's forward and backward and pp's forward: 3 pairs each, 2 records a pair, 3 iterations.
  EXPECT_EQ(routed, 3 * 3 * 2 * 3);
  const ProcessResult analyze = RunProcess({Cli(), "analyze", dir}, {}, 60);
  EXPECT_EQ(analyze.exit_code, 0) << analyze.out << analyze.err;
}

// PyTorch's all_to_all_single with uneven splits (the scenario's alltoallv: per peer a send and a
// receive of that pair's part, empty parts left out, parts at element offsets that are not 16-byte
// aligned) on 8 ranks. world's first AllReduce sets it up; then every part of the float32
// all-to-all (multiples of 70000 elements: whole packs, up to four chunks) runs on the exchange,
// and every part of the 3-element one (12 to 36 bytes) on NCCL, within one group each. Every
// received element is checked by the scenario runner, both sides of each pair agree, and the
// exporter's counts would show the routed ones (their records say engine ncclscope).
TEST(AccelExchange, UnevenAllToAllRunsOnTheExchangeOnEightRanks) {
  ScratchDir scratch;
  const std::string scenario = scratch / "alltoallv.json";
  std::ofstream(scenario) << R"({
    "name": "accel-alltoallv",
    "seed": 9,
    "min_ranks": 2,
    "repeat": 2,
    "steps": [
      {"name": "setup", "ops": [{"op": "allreduce", "count": 1024, "dtype": "float32"}]},
      {"name": "dispatch", "ops": [
        {"op": "alltoallv", "count": 70000, "dtype": "float32"},
        {"op": "alltoallv", "count": 3, "dtype": "float32"}
      ]}
    ]
  })";
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunProcess(
      {Cli(), "sim", "--ranks", "8", "--scenario", scenario, "--dir", dir, "--timeout", "90"},
      {{"NCCLSCOPE_ACCEL", "1"}, {"NCCLSCOPE_ACCEL_BUFFER", "4m"}}, 150);
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  EXPECT_EQ(sim.err.find("ncclscope: warning:"), std::string::npos) << sim.err;
  const auto dump = DumpJson(dir);
  ASSERT_EQ(dump.size(), 8u);
  int to_nccl = 0;
  const int routed = ExpectSendsAndReceives(dump, [&](const std::string&, uint64_t count) {
    const bool ours = count % 70000 == 0;
    to_nccl += ours ? 0 : 1;
    return std::string(ours ? "ncclscope" : "nccl");
  });
  EXPECT_GT(routed, 0);
  EXPECT_GT(to_nccl, 0);
  const ProcessResult analyze = RunProcess({Cli(), "analyze", dir}, {}, 60);
  EXPECT_EQ(analyze.exit_code, 0) << analyze.out << analyze.err;
}

// Stage 3 never issues its second iteration's pipeline: stage 2's send to it waits in the exchange
// kernel until NCCLSCOPE_ACCEL_TIMEOUT_MS, then gives up with one warning naming the group and
// the peer, and an accel_stall record. (The job then waits in NCCL as it would without
// ncclscope, until `sim --timeout`.)
TEST(AccelExchange, AStageThatNeverArrivesEndsItsPeersExchangeAndIsRecorded) {
  ScratchDir scratch;
  const std::string scenario = scratch / "stuck.json";
  std::ofstream(scenario) << R"({
    "name": "accel-exchange-stuck",
    "seed": 6,
    "min_ranks": 4,
    "repeat": 2,
    "steps": [
      {"name": "setup", "ops": [{"op": "allreduce", "count": 1024, "dtype": "float32"}]},
      {"name": "pp", "ops": [{"op": "pipeline", "count": 300000, "dtype": "float32"}]}
    ],
    "faults": [{"kind": "stuck_before", "ranks": [3], "step": 3, "op": 0}]
  })";
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunProcess(
      {Cli(), "sim", "--ranks", "4", "--scenario", scenario, "--dir", dir, "--timeout", "10"},
      {{"NCCLSCOPE_ACCEL", "1"},
       {"NCCLSCOPE_ACCEL_BUFFER", "4m"},
       {"NCCLSCOPE_ACCEL_TIMEOUT_MS", "2000"}},
      60);
  EXPECT_NE(sim.exit_code, 0) << sim.out << sim.err;
  EXPECT_NE(sim.err.find("[rank 2] ncclscope: warning: NCCLSCOPE_ACCEL: a group's sends and "
                         "receives on communicator world ended without its peer: rank 2 waited "
                         "for rank 3 at the slot-free barrier"),
            std::string::npos)
      << sim.err;
  const auto dump = DumpJson(dir);
  int stalls = 0;
  for (const auto& rec : dump.at(2).records) {
    if (rec.at("op") != "accel_stall") continue;
    ++stalls;
    EXPECT_EQ(rec.at("peer"), 3) << rec.dump();
  }
  EXPECT_EQ(stalls, 1);
}

}  // namespace
}  // namespace ncclscope::testing
