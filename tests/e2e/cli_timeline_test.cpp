// `ncclscope timeline` on a real emulated job of two nodes, as a user runs it after gathering the
// nodes' ring files into one directory: every rank is a process, each collective's device slices
// on all four ranks share one arrow chain, the clock bound between the two hosts is stated, the
// Chrome JSON form holds the same slices, and bad options or input exit non-zero naming the
// problem.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"
#include "tests/exporters/timeline/decoded_trace.h"

namespace ncclscope::testing {
namespace {

constexpr int kBadOptions = 2;

ProcessResult Timeline(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {Cli(), "timeline"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, {}, 60);
}

// A 4-rank job on two simulated nodes, its ring files gathered into `gathered`.
void TwoNodeJob(const ScratchDir& scratch, const std::string& gathered) {
  const std::string base = scratch / "trace";
  const ProcessResult sim =
      RunProcess({Cli(), "sim", "--ranks", "4", "--nodes", "2", "--scenario",
                  ScenarioPath("healthy.json"), "--dir", base, "--timeout", "60"},
                 {{"NCCLSCOPE_RING_RECORDS", "1024"}}, 90);
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  std::filesystem::create_directory(gathered);
  int copied = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(base)) {
    if (e.path().extension() != ".ring") continue;
    std::filesystem::copy_file(e.path(), gathered + "/" + e.path().filename().string());
    ++copied;
  }
  ASSERT_EQ(copied, 4);
}

TEST(CliTimeline, TwoNodesOneTraceWithArrowsAcrossRanksAndAStatedClockBound) {
  ScratchDir scratch;
  const std::string dir = scratch / "gathered";
  TwoNodeJob(scratch, dir);
  const std::string out = scratch / "job.pftrace";
  const ProcessResult run = Timeline({dir, "-o", out});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("4 ranks"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("2 hosts, 2 bounded"), std::string::npos) << run.out;

  const DecodedTrace t = DecodePerfettoFile(out);
  ASSERT_EQ(t.error, "");
  EXPECT_EQ(t.OverlapError(), "");
  std::map<int, std::string> processes;
  for (const auto& [uuid, track] : t.tracks) {
    if (track.is_process) processes[track.pid] = track.name;
  }
  ASSERT_EQ(processes.size(), 4u);
  EXPECT_NE(processes[0].find("node0"), std::string::npos) << processes[0];
  EXPECT_NE(processes[3].find("node1"), std::string::npos) << processes[3];

  // Collectives of the world communicator: one flow id per collective, on all four ranks.
  std::map<uint64_t, std::set<int>> ranks_by_flow;
  size_t world_collectives = 0;
  for (const DecodedEvent& s : t.slices) {
    if (s.category != "device" || t.CommOf(s) != "world") continue;
    EXPECT_TRUE(s.end_ns.has_value()) << s.name << " never ended in a healthy job";
    ASSERT_EQ(s.flows.size(), 1u) << s.name;
    ranks_by_flow[s.flows[0]].insert(t.PidOf(s.track));
    ++world_collectives;
  }
  ASSERT_FALSE(ranks_by_flow.empty());
  EXPECT_EQ(world_collectives, 4 * ranks_by_flow.size());
  for (const auto& [flow, ranks] : ranks_by_flow) {
    EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3})) << "flow " << flow;
  }

  // The bound is stated, and on one machine's clock it is no wider than the job itself.
  int64_t first = INT64_MAX;
  int64_t last = INT64_MIN;
  for (const DecodedEvent& s : t.slices) {
    first = std::min(first, s.begin_ns);
    last = std::max(last, s.end_ns.value_or(s.begin_ns));
  }
  bool stated = false;
  for (const DecodedEvent& i : t.instants) {
    if (i.name != "trace metadata") continue;
    stated = true;
    EXPECT_EQ(i.args.at("clock_hosts"), "2");
    EXPECT_EQ(i.args.at("clock_bounded_hosts"), "1");
    EXPECT_LE(std::stoll(i.args.at("clock_bound_ns")), last - first);
  }
  EXPECT_TRUE(stated);

  // The Chrome JSON form of the same job holds the same slices.
  const std::string json_path = scratch / "job.json";
  const ProcessResult json = Timeline({dir, "-o", json_path, "--format", "chrome-json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  std::ifstream in(json_path);
  const nlohmann::json j = nlohmann::json::parse(in);
  size_t slices = 0;
  for (const nlohmann::json& e : j["traceEvents"]) {
    if (e["ph"] == "X" || e["ph"] == "B") ++slices;
  }
  EXPECT_EQ(slices, t.slices.size());
}

TEST(CliTimeline, BadOptionsAndUnusableInputExitNonZeroNamingTheProblem) {
  ScratchDir scratch;
  const std::string dir = scratch / "gathered";
  TwoNodeJob(scratch, dir);
  const std::string out = scratch / "t.pftrace";

  const ProcessResult ranks = Timeline({dir, "-o", out, "--ranks", "3-1"});
  EXPECT_EQ(ranks.exit_code, kBadOptions);
  EXPECT_NE(ranks.err.find("'3-1'"), std::string::npos) << ranks.err;

  const ProcessResult window = Timeline({dir, "-o", out, "--from", "5", "--to", "2"});
  EXPECT_EQ(window.exit_code, kBadOptions) << window.err;

  const ProcessResult around = Timeline({dir, "-o", out, "--around", "3"});
  EXPECT_EQ(around.exit_code, kBadOptions);
  EXPECT_NE(around.err.find("--around 3 needs --comm"), std::string::npos) << around.err;
  const ProcessResult healthy = Timeline({dir, "-o", out, "--around", "verdict"});
  EXPECT_EQ(healthy.exit_code, kUnusableInput);
  EXPECT_NE(healthy.err.find("no verdict names an operation"), std::string::npos) << healthy.err;

  const ProcessResult comm = Timeline({dir, "-o", out, "--comm", "nosuch"});
  EXPECT_EQ(comm.exit_code, kUnusableInput);
  EXPECT_NE(comm.err.find("no selected rank has a communicator named 'nosuch'"), std::string::npos)
      << comm.err;

  const ProcessResult missing = Timeline({scratch / "nowhere", "-o", out});
  EXPECT_EQ(missing.exit_code, kUnusableInput);
  EXPECT_NE(missing.err.find("not a readable directory"), std::string::npos) << missing.err;

  const ProcessResult unwritable = Timeline({dir, "-o", scratch / "no/such/dir/t.pftrace"});
  EXPECT_EQ(unwritable.exit_code, kUnusableInput);
  EXPECT_NE(unwritable.err.find("no/such/dir/t.pftrace.partial"), std::string::npos)
      << unwritable.err;

  // None of these left a trace behind.
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
}

}  // namespace
}  // namespace ncclscope::testing
