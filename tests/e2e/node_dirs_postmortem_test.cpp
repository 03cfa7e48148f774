// A post-mortem across nodes: each node's directory copied off its node (job42/node0,
// job42/node1), then `ncclscope analyze DIR DIR` over them as one job. The job here hangs on a
// communicator whose two ranks sit on different nodes, so only the two directories together name
// the culprit: the node of the culprit sees nothing waiting, the other node a wait on a rank it
// does not hold. The simulated job is named with NCCLSCOPE_JOB_ID, as a batch script names its
// job, so the node directories are known before it starts.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/headline.h"
#include "tests/e2e/scratch_dir.h"

namespace ncclscope::testing {
namespace {

namespace fs = std::filesystem;

// 4 ranks on 2 nodes (0-1 on node0, 2-3 on node1); dp pairs ranks 0 with 2 and 1 with 3, one rank
// per node. Rank 0's host thread blocks before the dp allreduce of the third step: rank 2 waits
// in it; ranks 1 and 3 finish.
constexpr char kPostMortemScenario[] = R"({
  "name": "cross-node-missing",
  "description": "Rank 0 never issues dp allreduce #3, which rank 2, on the other node, waits in.",
  "repeat": 3,
  "compute": {"ms": 1},
  "communicators": [{"name": "dp", "split": {"by": "stride", "stride": 2}}],
  "steps": [{"name": "step", "ops": [{"op": "allreduce", "comm": "dp", "count": 64, "dtype": "float32"}]}],
  "faults": [{"kind": "stuck_before", "ranks": [0], "step": 2, "op": 0}]
})";

struct PostMortemAnalysis {
  int exit_code = -1;
  nlohmann::json json;
  std::string err;
};

// `ncclscope analyze --json --job-ended ARGS`: the launcher ended the job, so each analysis is a
// post-mortem as of its last heartbeat and does not depend on when it is taken.
PostMortemAnalysis PostMortem(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {Cli(), "analyze", "--json", "--job-ended"};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProcessResult r = RunProcess(argv, {}, 60);
  PostMortemAnalysis a{r.exit_code, {}, r.err};
  try {
    a.json = nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "analyze printed no JSON: " << e.what() << "\n" << r.out << r.err;
  }
  return a;
}

bool Blames(const nlohmann::json& analysis, int rank) {
  for (const auto& v : analysis.value("verdicts", nlohmann::json::array())) {
    for (int r : v.value("culprits", std::vector<int>{})) {
      if (r == rank) return true;
    }
  }
  return false;
}

bool HasNote(const nlohmann::json& analysis, const std::string& text) {
  for (const auto& n : analysis["input"].value("notes", nlohmann::json::array())) {
    if (n.get<std::string>().find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(NodeDirsPostMortem, BothNodeDirectoriesTogetherNameTheCulpritNeitherNamesAlone) {
  ScratchDir scratch;
  const std::string scenario = scratch / "cross-node-missing.json";
  std::ofstream(scenario) << kPostMortemScenario;
  const std::string base = scratch / "traces";
  const ProcessResult sim =
      RunProcess({Cli(), "sim", "--ranks", "4", "--nodes", "2", "--scenario", scenario, "--dir",
                  base, "--timeout", "5"},
                 {{"NCCLSCOPE_RING_RECORDS", "1024"}, {"NCCLSCOPE_JOB_ID", "job42"}}, 90);
  ASSERT_EQ(sim.exit_code, 1) << "rank 0 hangs and is killed\n" << sim.out << sim.err;
  // The job is the one named, in the directories and in every ring file.
  EXPECT_NE(sim.out.find(", job job42, "), std::string::npos) << sim.out;
  const std::string node0 = base + "/job42/node0";
  const std::string node1 = base + "/job42/node1";
  for (const std::string& dir : {node0, node1}) {
    const auto dump = DumpJson(dir);
    ASSERT_EQ(dump.size(), 2u) << dir;
    for (const auto& [rank, d] : dump) EXPECT_EQ(d.header.at("job_id"), "job42") << rank;
  }

  // Each node alone: node0 holds the culprit but nothing of it waits; node1 sees rank 2 wait on
  // a member it does not hold, and blames nobody.
  for (const std::string& dir : {node0, node1}) {
    const PostMortemAnalysis alone = PostMortem({dir});
    EXPECT_NE(alone.exit_code, 3) << alone.err;
    EXPECT_FALSE(Blames(alone.json, 0)) << dir << ": " << alone.json["verdicts"].dump();
  }

  // Together, as one job: rank 0 never issued dp allreduce #3.
  const Headline culprit{"missing", "dp", 3, {0}};
  const PostMortemAnalysis both = PostMortem({node0, node1});
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_EQ(HeadlineOf(both.json), culprit) << both.json["verdicts"].dump();
  EXPECT_EQ(both.json["input"].value("ranks_seen", 0), 4);
  // The job is chosen among every directory's files, as within one.
  EXPECT_EQ(HeadlineOf(PostMortem({"--job", "job42", node0, node1}).json), culprit);

  // Node directories given as --from (no digest in them) are read as directories, with a note.
  const PostMortemAnalysis from = PostMortem({"--from", node0, "--from", node1});
  EXPECT_EQ(HeadlineOf(from.json), culprit) << from.err;
  EXPECT_NE(from.err.find("--from " + node0 + ": a trace directory"), std::string::npos)
      << from.err;
  EXPECT_EQ(HeadlineOf(PostMortem({"--from", node0, node1}).json), culprit);

  // A copy of node1's files beside the originals: two files claim ranks 2 and 3, both are read
  // and the input report says so, as for two files of one rank in one directory.
  const fs::path copy = scratch / "node1-copy";
  fs::create_directories(copy);
  for (const auto& e : fs::directory_iterator(node1)) {
    if (e.path().extension() == ".ring") fs::copy_file(e.path(), copy / e.path().filename());
  }
  const PostMortemAnalysis twice = PostMortem({node0, node1, copy.string()});
  EXPECT_EQ(HeadlineOf(twice.json), culprit);
  EXPECT_EQ(twice.json["input"].value("ranks_seen", 0), 4);
  EXPECT_TRUE(HasNote(twice.json, "several files claim the same rank"))
      << twice.json["input"].dump();
  // The same directory twice is a mistake, not a second node.
  const ProcessResult same = RunProcess({Cli(), "analyze", node0, node1, node1 + "/"}, {}, 60);
  EXPECT_EQ(same.exit_code, 3);
  EXPECT_NE(same.err.find("given twice"), std::string::npos) << same.err;

  // stats, timeline and report read them as one job too.
  const ProcessResult stats = RunProcess({Cli(), "stats", "--json", node0, node1}, {}, 60);
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_EQ(nlohmann::json::parse(stats.out).at("ranks").size(), 4u) << stats.out;
  const ProcessResult timeline =
      RunProcess({Cli(), "timeline", node0, node1, "-o", scratch / "job.pftrace"}, {}, 60);
  EXPECT_NE(timeline.out.find(": 4 ranks,"), std::string::npos) << timeline.out << timeline.err;
  EXPECT_NE(timeline.out.find("clocks: 2 hosts"), std::string::npos) << timeline.out;
  const ProcessResult report =
      RunProcess({Cli(), "report", node0, node1, "-o", scratch / "job.html"}, {}, 60);
  EXPECT_NE(report.out.find(" 4 ranks"), std::string::npos) << report.out << report.err;

  // Flight Recorder dumps kept on each node (torch writes them where each rank runs) are read
  // together the same way, found by content in each directory; a rank dumped in two directories
  // is read once, from its newer dump, as within one directory.
  const fs::path gathered = scratch / "gathered";
  fs::create_directories(gathered);
  for (const std::string& dir : {node0, node1}) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".ring") fs::copy_file(e.path(), gathered / e.path().filename());
    }
  }
  const fs::path dumps = scratch / "fr";
  ASSERT_EQ(RunProcess({Cli(), "fr-export", gathered, "-o", dumps}, {}, 60).exit_code, 0);
  const fs::path fr0 = scratch / "fr-node0";
  const fs::path fr1 = scratch / "fr-node1";
  fs::create_directories(fr0);
  fs::create_directories(fr1);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string name = "nccl_trace_rank_" + std::to_string(rank);
    fs::copy_file(dumps / name, (rank < 2 ? fr0 : fr1) / name);
  }
  const Headline from_dumps = HeadlineOf(PostMortem({dumps.string()}).json);
  ASSERT_EQ(from_dumps.culprits, std::vector<int>{0}) << from_dumps;
  EXPECT_EQ(HeadlineOf(PostMortem({fr0.string(), fr1.string()}).json), from_dumps);
  fs::copy_file(dumps / "nccl_trace_rank_2", fr0 / "nccl_trace_rank_2");
  fs::last_write_time(fr0 / "nccl_trace_rank_2",
                      fs::last_write_time(fr1 / "nccl_trace_rank_2") - std::chrono::hours(1));
  const PostMortemAnalysis second = PostMortem({fr0.string(), fr1.string()});
  EXPECT_EQ(HeadlineOf(second.json), from_dumps);
  EXPECT_TRUE(HasNote(second.json, (fr0 / "nccl_trace_rank_2").string() +
                                       ": a second dump of rank 2; the newer one is read"))
      << second.json["input"].dump();

  // dump reads both directories in one rank order.
  const ProcessResult dump = RunProcess({Cli(), "dump", "--json", node0, node1}, {}, 60);
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  std::vector<int> order;  // the ranks of the headers, in the order printed
  std::istringstream lines(dump.out);
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded() && j.value("type", "") == "header") order.push_back(j.at("rank"));
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace ncclscope::testing
