// libncclscope.so when NCCL emits a launch's Group, Coll and P2p events away from the call that
// made them, and with NCCL 2.26-2.27's profiler v4, which has no API events to tie them to it.
// NCCL 2.28.9 emits them from a CUDA host-function thread whenever CUDA_LAUNCH_BLOCKING is set or
// the launch is graph-captured (src/enqueue.cc ncclLaunchPrepare -> cudaLaunchHostFunc(
// hostStream, hostStreamPlanCallback) -> hostStreamPlanTask); the emulator follows it for
// CUDA_LAUNCH_BLOCKING (tests/sim/emulator/profiler_host_callback_test.cpp pins the thread and
// order), and offers only the v4 table with NCCLSIM_PROFILER_ABI=4 (NCCL's v4 adapter,
// src/plugin/profiler/profiler_v4.cc). A healthy job under `ncclscope sim`, with the probe
// preloaded and as the profiler plugin alone: what a user must see is what the default launch
// with v5 gives — the job unharmed, every operation completed on the device, one device start per
// collective and per send/receive under its number (grouped ones included: a group's events come
// at its end, in NCCL's plan order), and each call recorded under the thread that made it.
#include <gtest/gtest.h>

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
#include "tests/e2e/trace_consistency.h"

namespace ncclscope::testing {
namespace {

constexpr int kLaunchRanks = 8;

struct LaunchMode {
  bool plugin_only;
  bool host_callback;  // CUDA_LAUNCH_BLOCKING=1
  int profiler_abi;    // the newest profiler table NCCL looks up
};

ProcessResult RunScenario(const std::string& scenario, const std::string& dir,
                          const LaunchMode& mode) {
  std::map<std::string, std::string> env = {{"NCCLSCOPE_RING_RECORDS", "4096"}};
  if (mode.host_callback) env["CUDA_LAUNCH_BLOCKING"] = "1";
  if (mode.profiler_abi != 5) env["NCCLSIM_PROFILER_ABI"] = std::to_string(mode.profiler_abi);
  std::vector<std::string> argv = {Cli(), "sim"};
  if (mode.plugin_only) {
    argv.emplace_back("--no-probe");
    env["NCCL_PROFILER_PLUGIN"] = ProbeLibrary();
    env["NVTX_INJECTION64_PATH"] = ProbeLibrary();
    env["LD_PRELOAD"] = "";
  }
  for (const std::string& a :
       {std::string("--ranks"), std::to_string(kLaunchRanks), std::string("--scenario"),
        ScenarioPath(scenario), std::string("--dir"), dir, std::string("--timeout"),
        std::string("30")}) {
    argv.push_back(a);
  }
  return RunProcess(argv, env, 90);
}

// NCCL's ncclAlltoAll, ncclGather and ncclScatter first appear in 2.28 (src/collectives.cc), whose
// loader takes the probe's v5 table before v4 (src/plugin/profiler.cc): a v4 profiler never sees
// their parts. The emulator still runs them under NCCLSIM_PROFILER_ABI=4; their start markers are
// then "unknown" (seq 0) when the parts are launched away from the call, and are not asked for.
bool PartsUnnumbered(const std::string& op, const LaunchMode& mode) {
  return mode.profiler_abi < 5 && (op == "alltoall" || op == "gather" || op == "scatter");
}

// Returns how many sends and receives the rank recorded.
size_t ExpectDeviceProgressRecorded(const RankDump& d, const LaunchMode& mode) {
  // Every call's record is the calling thread's: the sim rank calls NCCL from one thread.
  std::set<uint64_t> tids;
  for (const auto& rec : d.records) tids.insert(rec.at("tid").get<uint64_t>());
  EXPECT_EQ(tids.size(), 1u) << "call records under several threads";

  std::multiset<std::pair<std::string, uint64_t>> starts;
  std::multiset<std::tuple<std::string, std::string, int, uint64_t>> p2p_starts;
  for (const auto& rec : d.profiler_records) {
    if (rec.at("op") == "device_start") {
      if (mode.profiler_abi < 5 && rec.at("seq").get<uint64_t>() == 0) continue;
      starts.emplace(rec.at("comm_id").get<std::string>(), rec.at("seq").get<uint64_t>());
    } else if (rec.at("op") == "p2p_device_start") {
      if (mode.profiler_abi < 5 && rec.at("seq").get<uint64_t>() == 0) continue;  // a part's
      p2p_starts.emplace(rec.at("operation").get<std::string>(),
                         rec.at("comm_id").get<std::string>(), rec.at("peer").get<int>(),
                         rec.at("seq").get<uint64_t>());
    }
  }
  size_t collectives = 0;
  size_t parted_found = 0;
  size_t p2p = 0;
  for (const auto& rec : d.records) {
    const std::string op = rec.at("op");
    const bool is_p2p = op == "send" || op == "recv";
    if (kCollectives.count(op) == 0 && !is_p2p) continue;
    // After a clean exit every enqueued operation completed on the device.
    EXPECT_EQ(rec.at("device"), "done") << rec.dump();
    const std::string comm = rec.at("comm_id");
    const auto seq = rec.at("seq").get<uint64_t>();
    if (PartsUnnumbered(op, mode)) {
      const size_t found = starts.count({comm, seq});  // numbered when launched inside the call
      EXPECT_LE(found, 1u) << rec.dump();
      parted_found += found;
      continue;
    }
    if (is_p2p) {
      ++p2p;
      EXPECT_EQ(p2p_starts.count({op, comm, rec.at("peer").get<int>(), seq}), 1u) << rec.dump();
    } else {
      ++collectives;
      EXPECT_EQ(starts.count({comm, seq}), 1u) << rec.dump();
    }
  }
  EXPECT_GT(collectives, 0u);
  EXPECT_EQ(starts.size(), collectives + parted_found);
  EXPECT_EQ(p2p_starts.size(), p2p);
  return p2p;
}

// Not plugin-only with v4: without API events its records are made at the Coll and P2p events,
// on whichever thread launches them (plugin/README.md, plugin-only v4).
class LaunchAwayFromTheCall : public ::testing::TestWithParam<LaunchMode> {};

void ExpectEveryOperationStarted(const std::string& scenario, const LaunchMode& mode,
                                 bool with_p2p) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const ProcessResult sim = RunScenario(scenario, dir, mode);
  // Exit 0: every rank checked every result.
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  EXPECT_EQ(sim.err.find("ncclscope: warning:"), std::string::npos) << sim.err;
  const auto dump = DumpJson(dir);
  ASSERT_EQ(static_cast<int>(dump.size()), kLaunchRanks);
  for (const auto& [rank, d] : dump) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(ExpectDeviceProgressRecorded(d, mode) > 0, with_p2p);
  }
  ExpectCollectivesAgree(dump);
  ExpectSendRecvMatch(dump);
}

TEST_P(LaunchAwayFromTheCall, DeviceStartsAndCompletionsAsWithTheDefaultLaunch) {
  ExpectEveryOperationStarted("healthy.json", GetParam(), true);
}

// Bucketed collectives in one group (PyTorch's coalescing manager): NCCL launches them at the
// group's end in its plan order, by size and type (src/enqueue.cc ncclPrepareTasks), not in call
// order; each still gets its one device start under its own number.
TEST_P(LaunchAwayFromTheCall, GroupedCollectivesOfManySizesEachGetTheirDeviceStart) {
  ExpectEveryOperationStarted("coalesced.json", GetParam(), false);
}

INSTANTIATE_TEST_SUITE_P(Modes, LaunchAwayFromTheCall,
                         ::testing::Values(LaunchMode{false, false, 5}, LaunchMode{false, true, 5},
                                           LaunchMode{true, true, 5}, LaunchMode{false, false, 4},
                                           LaunchMode{false, true, 4}),
                         [](const auto& info) {
                           const LaunchMode& m = info.param;
                           return std::string(m.plugin_only ? "PluginOnly" : "Interposed") +
                                  (m.host_callback ? "HostCallback" : "DefaultLaunch") + "V" +
                                  std::to_string(m.profiler_abi);
                         });

}  // namespace
}  // namespace ncclscope::testing
