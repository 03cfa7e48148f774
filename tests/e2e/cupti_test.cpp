// NCCLSCOPE_CUPTI end to end: emulated jobs whose ranks load the emulated libcupti.so.13
// (sim/cupti) record each collective's GPU compute time, and the straggler verdict says what the
// device time shows; with the toolkit's real libcupti on this GPU-less machine the probe fails
// open: one warning per rank, the job as without it.
//
// Timing: compute phases are 40 ms emulated kernels (80 ms on the straggler); what is asserted
// holds at any machine load: medians differing by tens of milliseconds, a 2x straggler named
// (as straggler_scenarios_test.cpp asserts it), and for the subtle 3x slow link only what must
// never be wrong.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"

namespace ncclscope::testing {
namespace {

const std::map<std::string, std::string> kCuptiEnv = {
    {"NCCLSCOPE_CUPTI", "1"},
    {"NCCLSCOPE_HEARTBEAT_MS", "20"},  // the probe polls CUPTI every heartbeat
    {"NCCLSIM_LATENCY_US", "5000"},    // as straggler_scenarios_test.cpp: transfers over noise
};

double Median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds of GPU compute before each collective of communicator `comm` on one rank, from
// its device_compute records whose stretch is known (a first kernel's is not).
std::vector<double> ComputeBefore(const RankDump& rank, const std::string& comm) {
  std::vector<double> ms;
  for (const nlohmann::json& r : rank.profiler_records) {  // where dump_json.h puts them
    if (r.at("op") == "device_compute" && r.at("comm_name") == comm) {
      ms.push_back(r.at("count").get<double>() * 1e-6);
    }
  }
  return ms;
}

// The largest median over the communicators: the step's compute comes before one of them.
double StepComputeMs(const RankDump& rank) {
  double best = -1;
  for (const char* comm : {"tp", "dp", "world"}) {
    std::vector<double> v = ComputeBefore(rank, comm);
    std::erase_if(v, [](double ms) { return ms <= 0; });
    best = std::max(best, Median(v));
  }
  return best;
}

nlohmann::json AnalyzeJson(const std::string& dir) {
  const ProcessResult a = RunProcess({Cli(), "analyze", dir, "--json"}, {}, 120);
  EXPECT_LE(a.exit_code, 1) << a.err;  // healthy or straggler, never a hang
  auto j = nlohmann::json::parse(a.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << a.out;
  return j;
}

TEST(Cupti, ComputeStragglerIsSeenInItsGpuComputeTime) {
  ScratchDir dir;
  const ProcessResult sim = RunSim("compute-straggler-2x.json", 8, dir / "trace", 120, kCuptiEnv);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_EQ(sim.err.find("CUPTI unavailable"), std::string::npos) << sim.err;
  const auto ranks = DumpJson(dir / "trace");
  ASSERT_EQ(ranks.size(), 8u);
  for (const auto& [rank, dump] : ranks) {
    EXPECT_FALSE(ComputeBefore(dump, "tp").empty()) << "rank " << rank;
  }
  // Its compute kernels take 80 ms from step 4 on, its tensor-parallel partner's 40 ms.
  const double straggler = StepComputeMs(ranks.at(7)), partner = StepComputeMs(ranks.at(6));
  EXPECT_GE(straggler, 80.0);
  EXPECT_GE(partner, 40.0);
  EXPECT_GT(straggler, partner + 20.0);

  const nlohmann::json j = AnalyzeJson(dir / "trace");
  SCOPED_TRACE(j.dump(2));
  ASSERT_FALSE(j["verdicts"].empty());
  const auto& v = j["verdicts"][0];
  EXPECT_EQ(v["class"], "straggler");
  EXPECT_EQ(v["culprits"], nlohmann::json::array({7}));
  const std::string summary = v["summary"];
  EXPECT_NE(summary.find("compute straggler"), std::string::npos);
  EXPECT_NE(summary.find("longer (device time)"), std::string::npos);
}

TEST(Cupti, SlowLinkIsNeverTakenForACompute) {
  ScratchDir dir;
  const ProcessResult sim = RunSim("slow-link-3x.json", 8, dir / "trace", 120, kCuptiEnv);
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const auto ranks = DumpJson(dir / "trace");
  ASSERT_EQ(ranks.size(), 8u);
  // Every rank computes 40 ms a step: the slow rank's GPU too.
  EXPECT_LT(std::abs(StepComputeMs(ranks.at(2)) - StepComputeMs(ranks.at(3))), 20.0);

  const nlohmann::json j = AnalyzeJson(dir / "trace");
  SCOPED_TRACE(j.dump(2));
  for (const auto& v : j["verdicts"]) {
    if (v["class"] != "straggler") continue;
    const std::string summary = v["summary"];
    EXPECT_EQ(summary.find("compute straggler"), std::string::npos);
    EXPECT_EQ(summary.find("GPU computes"), std::string::npos);
  }
}

TEST(Cupti, RealCuptiWithoutADriverWarnsOnceAndChangesNothing) {
  const std::string real = "/usr/local/cuda/lib64/libcupti.so.13";
  if (!std::filesystem::exists(real)) GTEST_SKIP() << "no " << real;
  ScratchDir dir;
  // The probe tries CUPTI at the background thread's first tick, one heartbeat after the rank's
  // first NCCL call: a rank whose whole job is shorter never tries (nor needs to), so the job here
  // (40 ms of compute a step, 24 steps) outlives fifty heartbeats on every rank.
  const ProcessResult with = RunSim("healthy-jitter.json", 4, dir / "with", 120,
                                    {{"NCCLSCOPE_CUPTI", real}, {"NCCLSCOPE_HEARTBEAT_MS", "20"}});
  const ProcessResult without = RunSim("healthy-jitter.json", 4, dir / "without", 120);
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_EQ(with.exit_code, 0) << with.err;
  const std::string warning =
      "ncclscope: warning: CUPTI unavailable (cuptiActivityEnable(CONCURRENT_KERNEL) failed: "
      "CUPTI_ERROR_UNKNOWN (999)); GPU compute time per collective is not recorded";
  size_t warnings = 0;
  for (size_t at = with.err.find(warning); at != std::string::npos;
       at = with.err.find(warning, at + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 4u) << with.err;  // one line per rank
  EXPECT_EQ(with.out.find("CUPTI"), std::string::npos) << with.out;
  const auto a = DumpJson(dir / "with"), b = DumpJson(dir / "without");
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  // The same calls with the same results; the profiler side's records depend on timing, so only
  // the calls are compared, and nothing of CUPTI's is there.
  auto calls = [](const RankDump& d) {
    static const std::vector<std::string> kCalls = {
        "allreduce", "broadcast", "reduce", "allgather", "reducescatter", "alltoall",
        "gather",    "scatter",   "send",   "recv",      "group_start",   "group_end"};
    std::vector<std::string> out;
    for (const nlohmann::json& x : d.profiler_records) {
      const std::string op = x.at("op");
      EXPECT_TRUE(op != "device_compute" && op != "device_activity_loss") << op;
    }
    for (const nlohmann::json& x : d.records) {
      const std::string op = x.at("op");
      if (std::find(kCalls.begin(), kCalls.end(), op) == kCalls.end()) continue;
      out.push_back(op + " " + x.value("comm_name", "") + " #" + std::to_string(x.value("seq", 0)) +
                    " " + x.value("result", ""));
    }
    return out;
  };
  for (int r = 0; r < 4; ++r) EXPECT_EQ(calls(a.at(r)), calls(b.at(r))) << "rank " << r;
}

}  // namespace
}  // namespace ncclscope::testing
