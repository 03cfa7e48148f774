// `ncclscope stats` on a real emulated job, as a user runs it: one row per communicator x
// operation x size class whose calls add up to the operations every rank recorded (ncclscope dump
// says which), each communicator of a split named by its members, the three output forms agree,
// and unusable input exits 3 naming what is wrong.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"

namespace ncclscope::testing {
namespace {

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

  // The scenario splits tp, dp and ep into two communicators each: every row names which by its
  // members, and no two rows of one communicator name, operation and size class read alike.
  std::set<std::tuple<std::string, std::string, std::string>> keys;
  std::map<std::string, std::set<int>> members_of_name;
  std::map<std::string, std::string> label_of_id;
  for (const nlohmann::json& row : t["rows"]) {
    const std::string comm = row["comm"], label = row["label"];
    const std::vector<int> members = row["members"];
    std::string ranks;
    for (int m : members) ranks += (ranks.empty() ? "" : ",") + std::to_string(m);
    if (members.size() == 4) ranks = "0-3";
    EXPECT_EQ(label, comm + " (ranks " + ranks + ")");
    EXPECT_TRUE(keys.insert({label, row["op"], row["size_class"]}).second) << label;
    members_of_name[comm].insert(members.begin(), members.end());
    const auto [it, fresh] = label_of_id.emplace(row["comm_id"], label);
    EXPECT_EQ(it->second, label) << "one communicator, one label";
  }
  for (const char* split : {"tp", "dp", "ep"}) {
    size_t instances = 0;
    for (const auto& [id, label] : label_of_id) instances += label.rfind(split, 0) == 0 ? 1 : 0;
    EXPECT_EQ(instances, 2u) << split;
    EXPECT_EQ(members_of_name[split], (std::set<int>{0, 1, 2, 3})) << split;
  }
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
  EXPECT_TRUE(line.size() > 6 && line.compare(line.size() - 6, 6, ",label") == 0) << line;
  while (std::getline(lines, line)) {
    // The label, last, is the JSON row's (quoted when it holds a comma: `tp (ranks 0,1)`).
    if (rows < t["rows"].size()) {
      const std::string label = t["rows"][rows]["label"];
      const std::string field =
          "," + (label.find(',') == std::string::npos ? label : "\"" + label + "\"");
      EXPECT_TRUE(line.size() > field.size() &&
                  line.compare(line.size() - field.size(), field.size(), field) == 0)
          << line;
    }
    ++rows;
  }
  EXPECT_EQ(rows, t["rows"].size());
  const ProcessResult text = Stats({dir.path()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const auto& [id, label] : label_of_id) {
    EXPECT_NE(text.out.find("\n" + label + " "), std::string::npos) << label;
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
