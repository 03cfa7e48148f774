// libncclscope.so when NCCL emits a launch's Group, Coll and P2p events from a CUDA host-function
// thread instead of the calling thread. NCCL 2.28.9 does so whenever CUDA_LAUNCH_BLOCKING is set
// or the launch is graph-captured (src/enqueue.cc ncclLaunchPrepare -> cudaLaunchHostFunc(
// hostStream, hostStreamPlanCallback) -> hostStreamPlanTask); the emulator follows it for
// CUDA_LAUNCH_BLOCKING (tests/sim/emulator/profiler_host_callback_test.cpp pins the thread and
// order). A healthy job under `ncclscope sim` with CUDA_LAUNCH_BLOCKING=1, with the probe
// preloaded and as the profiler plugin alone: what a user must see is what the default launch
// gives — the job unharmed, every operation completed on the device, one device start per
// collective and per send/receive under its number, and each call recorded under the thread that
// made it, not the host stream's.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/trace_consistency.h"

namespace ncclscope::testing {
namespace {

constexpr int kRanks = 8;

const std::set<std::string> kCollectives = {"allreduce",     "broadcast", "reduce", "allgather",
                                            "reducescatter", "alltoall",  "gather", "scatter"};

ProcessResult RunHealthy(const std::string& dir, bool plugin_only) {
  std::map<std::string, std::string> env = {{"CUDA_LAUNCH_BLOCKING", "1"},
                                            {"NCCLSCOPE_RING_RECORDS", "4096"}};
  std::vector<std::string> argv = {Cli(), "sim"};
  if (plugin_only) {
    argv.emplace_back("--no-probe");
    env["NCCL_PROFILER_PLUGIN"] = ProbeLibrary();
    env["NVTX_INJECTION64_PATH"] = ProbeLibrary();
    env["LD_PRELOAD"] = "";
  }
  for (const std::string& a :
       {std::string("--ranks"), std::to_string(kRanks), std::string("--scenario"),
        ScenarioPath("healthy.json"), std::string("--dir"), dir, std::string("--timeout"),
        std::string("30")}) {
    argv.push_back(a);
  }
  return RunProcess(argv, env, 90);
}

void ExpectDeviceProgressRecorded(const RankDump& d) {
  // Every call's record is the calling thread's: the sim rank calls NCCL from one thread.
  std::set<uint64_t> tids;
  for (const auto& rec : d.records) tids.insert(rec.at("tid").get<uint64_t>());
  EXPECT_EQ(tids.size(), 1u) << "call records under several threads";

  std::multiset<std::pair<std::string, uint64_t>> starts;
  std::multiset<std::tuple<std::string, std::string, int, uint64_t>> p2p_starts;
  for (const auto& rec : d.profiler_records) {
    if (rec.at("op") == "device_start") {
      starts.emplace(rec.at("comm_id").get<std::string>(), rec.at("seq").get<uint64_t>());
    } else if (rec.at("op") == "p2p_device_start") {
      p2p_starts.emplace(rec.at("operation").get<std::string>(),
                         rec.at("comm_id").get<std::string>(), rec.at("peer").get<int>(),
                         rec.at("seq").get<uint64_t>());
    }
  }
  size_t collectives = 0;
  size_t p2p = 0;
  for (const auto& rec : d.records) {
    const std::string op = rec.at("op");
    const bool is_p2p = op == "send" || op == "recv";
    if (kCollectives.count(op) == 0 && !is_p2p) continue;
    // After a clean exit every enqueued operation completed on the device.
    EXPECT_EQ(rec.at("device"), "done") << rec.dump();
    const std::string comm = rec.at("comm_id");
    const auto seq = rec.at("seq").get<uint64_t>();
    if (is_p2p) {
      ++p2p;
      EXPECT_EQ(p2p_starts.count({op, comm, rec.at("peer").get<int>(), seq}), 1u) << rec.dump();
    } else {
      ++collectives;
      EXPECT_EQ(starts.count({comm, seq}), 1u) << rec.dump();
    }
  }
  EXPECT_GT(collectives, 0u);
  EXPECT_GT(p2p, 0u);
  EXPECT_EQ(starts.size(), collectives);
  EXPECT_EQ(p2p_starts.size(), p2p);
}

class HostCallbackLaunch : public ::testing::TestWithParam<bool> {};

TEST_P(HostCallbackLaunch, DeviceStartsAndCompletionsAsWithTheDefaultLaunch) {
  const bool plugin_only = GetParam();
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunHealthy(dir, plugin_only);
  // Exit 0: every rank checked every result.
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  EXPECT_EQ(sim.err.find("ncclscope: warning:"), std::string::npos) << sim.err;
  const auto dump = DumpJson(dir);
  ASSERT_EQ(static_cast<int>(dump.size()), kRanks);
  for (const auto& [rank, d] : dump) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    ExpectDeviceProgressRecorded(d);
  }
  ExpectCollectivesAgree(dump);
  ExpectSendRecvMatch(dump);
}

INSTANTIATE_TEST_SUITE_P(Modes, HostCallbackLaunch, ::testing::Values(false, true),
                         [](const auto& info) {
                           return std::string(info.param ? "PluginOnly" : "Interposed");
                         });

}  // namespace
}  // namespace ncclscope::testing
