// `ncclscope stats` on a real emulated job, as a user runs it: one row per communicator x
// operation x size class whose calls add up to the operations every rank recorded (ncclscope dump
// says which), the three output forms agree, and unusable input exits 3 naming what is wrong.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"

namespace ncclscope::testing {
namespace {

constexpr int kUnusableInput = 3;

ProcessResult Stats(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {Cli(), "stats"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, {}, 60);
}

bool IsOperation(const std::string& op) {
  for (const char* o : {"allreduce", "broadcast", "reduce", "allgather", "reducescatter",
                        "alltoall", "gather", "scatter", "send", "recv"}) {
    if (op == o) return true;
  }
  return false;
}

TEST(CliStats, RowsAddUpToEveryRanksCompletedOperations) {
  ScratchDir dir;
  const ProcessResult job = RunSim("healthy.json", 4, dir.path(), 120);
  ASSERT_EQ(job.exit_code, 0) << job.err;

  // What the ranks recorded, per (communicator id, operation): the completed calls.
  std::map<std::pair<std::string, std::string>, uint64_t> recorded;
  for (const auto& [rank, dump] : DumpJson(dir.path())) {
    for (const nlohmann::json& r : dump.records) {
      const std::string op = r.value("op", "");
      if (!IsOperation(op) || r.value("device", "") != "done") continue;
      ++recorded[{r.value("comm_id", ""), op}];
    }
  }
  ASSERT_FALSE(recorded.empty());

  const ProcessResult json = Stats({dir.path(), "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json t = nlohmann::json::parse(json.out);
  EXPECT_EQ(t["files"], 4);
  std::map<std::pair<std::string, std::string>, uint64_t> tabled;
  for (const nlohmann::json& row : t["rows"]) {
    tabled[{row["comm_id"].get<std::string>(), row["op"].get<std::string>()}] +=
        row["calls"].get<uint64_t>();
    EXPECT_GE(row["p99_s"].get<double>(), row["p50_s"].get<double>());
    EXPECT_GT(row["p50_s"].get<double>(), 0);
  }
  EXPECT_EQ(tabled, recorded);
  ASSERT_EQ(t["ranks"].size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(t["ranks"][r]["rank"], r);
    EXPECT_EQ(t["ranks"][r]["pending"], 0);
  }

  // The CSV has the same rows; the text table names every communicator of the scenario.
  const ProcessResult csv = Stats({dir.path(), "--csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::istringstream lines(csv.out);
  std::string line;
  size_t rows = 0;
  std::getline(lines, line);
  EXPECT_EQ(line.rfind("comm,comm_id,nranks,op,size_class,calls,", 0), 0u) << line;
  while (std::getline(lines, line)) ++rows;
  EXPECT_EQ(rows, t["rows"].size());
  const ProcessResult text = Stats({dir.path()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* comm : {"world", "tp", "dp", "ep"}) {
    EXPECT_NE(text.out.find(std::string("\n") + comm + " "), std::string::npos) << comm;
  }
  EXPECT_NE(text.out.find("busBw"), std::string::npos);
}

TEST(CliStats, UnusableInputExitsThreeAndSaysWhy) {
  ScratchDir dir;
  const ProcessResult empty = Stats({dir.path()});
  EXPECT_EQ(empty.exit_code, kUnusableInput);
  EXPECT_NE(empty.err.find("no readable ring file"), std::string::npos) << empty.err;
  const ProcessResult missing = Stats({dir.path() + "/nope"});
  EXPECT_EQ(missing.exit_code, kUnusableInput);
  EXPECT_NE(missing.err.find(dir.path() + "/nope"), std::string::npos) << missing.err;
  EXPECT_TRUE(missing.out.empty());
}

}  // namespace
}  // namespace ncclscope::testing
