// A clean job over the emulator with the probe: every collective type, splits, send/recv. What a
// user relies on: the job is unharmed, and the trace holds exactly what every rank called, in
// order, under ids and sequence numbers that line up across ranks.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/op_kinds.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/sim_plan.h"
#include "tests/e2e/trace_consistency.h"

namespace ncclscope::testing {
namespace {

class HealthyJob : public ::testing::TestWithParam<int> {};

TEST_P(HealthyJob, EveryRankRecordsExactlyItsCallsAndRanksAgree) {
  const int n = GetParam();
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunSim("healthy.json", n, dir, 30);
  // Exit 0 means every rank checked every result; a probe that disturbed data would show here.
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  EXPECT_NE(sim.out.find("all " + std::to_string(n) + " ranks finished with correct results"),
            std::string::npos)
      << sim.out;
  EXPECT_EQ(sim.err.find("ncclscope: warning:"), std::string::npos) << sim.err;

  const auto dump = DumpJson(dir);
  ASSERT_EQ(static_cast<int>(dump.size()), n) << "one ring file per rank";
  std::set<std::string> ops_seen;
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_EQ(dump.count(r), 1u);
    const RankDump& d = dump.at(r);
    EXPECT_EQ(d.header.at("world_size"), n);
    EXPECT_EQ(d.header.at("torn_records"), 0);
    EXPECT_EQ(d.header.at("dropped_records"), 0);
    EXPECT_EQ(d.header.at("overwritten"), 0);
    const RankPlan plan = LoadPlan(ScenarioPath("healthy.json"), r, n);
    EXPECT_TRUE(plan.stop.is_null()) << plan.stop.dump();
    EXPECT_EQ(d.records.size(), plan.calls.size()) << "records versus planned calls";
    ExpectRecordsMatchPlan(d, plan.calls);
    for (const auto& rec : d.records) {
      ops_seen.insert(rec.at("op").get<std::string>());
      // After a clean exit every enqueued operation has completed on the device.
      if (IsDeviceWork(rec.at("op"))) {
        EXPECT_EQ(rec.at("device"), "done") << rec.dump();
      }
    }
  }
  for (const char* op : {"allreduce", "broadcast", "reduce", "allgather", "reducescatter",
                         "alltoall", "gather", "scatter", "send", "recv", "comm_split"}) {
    EXPECT_EQ(ops_seen.count(op), 1u) << "healthy.json no longer exercises " << op;
  }
  ExpectCollectivesAgree(dump);
  ExpectSendRecvMatch(dump);
  // The probe is NCCL's profiler plugin too: one device start per collective, under its number.
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankDump& d = dump.at(r);
    std::multiset<std::pair<std::string, uint64_t>> starts;
    for (const auto& rec : d.profiler_records) {
      if (rec.at("op") == "device_start") {
        starts.emplace(rec.at("comm_id").get<std::string>(), rec.at("seq").get<uint64_t>());
      }
    }
    size_t collectives = 0;
    for (const auto& rec : d.records) {
      if (!IsDeviceWork(rec.at("op")) || rec.at("op") == "send" || rec.at("op") == "recv") continue;
      ++collectives;
      EXPECT_EQ(starts.count({rec.at("comm_id").get<std::string>(), rec.at("seq").get<uint64_t>()}),
                1u)
          << rec.dump();
    }
    EXPECT_EQ(starts.size(), collectives);
  }
  // NCCL 2.28.9 runs send and receive through its point-to-point path (src/enqueue.cc,
  // p2pTaskAppend: P2pApi and P2p events, KernelCh parented to P2p): one p2p_device_start per send
  // and receive, under its (peer, per-peer number), naming the operation in the dump.
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankDump& d = dump.at(r);
    std::multiset<std::tuple<std::string, std::string, int, uint64_t>> starts;
    for (const auto& rec : d.profiler_records) {
      if (rec.at("op") != "p2p_device_start") continue;
      EXPECT_EQ(rec.at("redop"), "") << "a device start has no reduction op: " << rec.dump();
      starts.emplace(rec.at("operation").get<std::string>(), rec.at("comm_id").get<std::string>(),
                     rec.at("peer").get<int>(), rec.at("seq").get<uint64_t>());
    }
    size_t p2p = 0;
    for (const auto& rec : d.records) {
      if (rec.at("op") != "send" && rec.at("op") != "recv") continue;
      ++p2p;
      EXPECT_EQ(starts.count({rec.at("op").get<std::string>(), rec.at("comm_id").get<std::string>(),
                              rec.at("peer").get<int>(), rec.at("seq").get<uint64_t>()}),
                1u)
          << rec.dump();
    }
    EXPECT_EQ(starts.size(), p2p);
  }
}

// 32 ranks run in well under a second here; a 2-core CI machine still fits them in seconds.
INSTANTIATE_TEST_SUITE_P(Ranks, HealthyJob, ::testing::Values(8, 32),
                         [](const auto& info) { return std::to_string(info.param) + "Ranks"; });

}  // namespace
}  // namespace ncclscope::testing
