// `ncclscope fr-export` on a real emulated job, as a user runs it before pointing torch's analyzer
// at the output: one private dump file per rank, every operation the rank recorded is an entry,
// the groups name their members, and unusable input exits 3 saying what is wrong.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"
#include "trace/flight_recorder/fr_dump.h"
#include "trace/flight_recorder/pickle_reader.h"

namespace ncclscope::testing {
namespace {

ProcessResult FrExport(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {Cli(), "fr-export"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, {}, 60);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int Mode(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int>(st.st_mode & 0777);
}

bool IsOperation(const std::string& op) {
  for (const char* o : {"allreduce", "broadcast", "reduce", "allgather", "reducescatter",
                        "alltoall", "gather", "scatter", "send", "recv"}) {
    if (op == o) return true;
  }
  return false;
}

std::optional<flight_recorder::FrDump> ReadDump(const std::string& path) {
  const std::string bytes = ReadFile(path);
  std::string error;
  auto tree = flight_recorder::ParsePickle(bytes.data(), bytes.size(), {}, &error);
  EXPECT_TRUE(tree.has_value()) << path << ": " << error;
  if (!tree) return std::nullopt;
  auto dump = flight_recorder::DecodeFrDump(*tree, &error);
  EXPECT_TRUE(dump.has_value()) << path << ": " << error;
  return dump;
}

TEST(CliFrExport, EveryRecordedOperationOfEveryRankBecomesAnEntry) {
  ScratchDir dir;
  const ProcessResult job = RunSim("healthy.json", 4, dir.path(), 120);
  ASSERT_EQ(job.exit_code, 0) << job.err;
  const std::string out = dir / "fr";

  const ProcessResult r = FrExport({dir.path(), "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote 4 Flight Recorder dump(s)"), std::string::npos) << r.out;
  EXPECT_EQ(Mode(out), 0700);

  const std::map<int, RankDump> recorded = DumpJson(dir.path());
  ASSERT_EQ(recorded.size(), 4u);
  for (const auto& [rank, rank_dump] : recorded) {
    const std::string path = out + "/nccl_trace_rank_" + std::to_string(rank);
    EXPECT_EQ(Mode(path), 0600) << path;
    const auto dump = ReadDump(path);
    ASSERT_TRUE(dump.has_value());
    EXPECT_EQ(dump->version, "2.10");

    size_t operations = 0;
    size_t grouped = 0;
    for (const nlohmann::json& rec : rank_dump.records) {
      if (!IsOperation(rec.value("op", "")) || rec.value("seq", 0) == 0) continue;
      ++operations;
      if (rec.value("in_group", false) && rec.value("group_id", 0) != 0) ++grouped;
    }
    size_t entries = 0;
    size_t scheduled = 0;
    for (const flight_recorder::FrEntry& e : dump->entries) {
      if (e.profiling_name != "nccl:coalesced") ++entries;
      // A healthy job finished everything: each ungrouped op and each group's closing entry is
      // completed; the per-op entries of a group keep torch's null events and stay scheduled.
      if (e.state == flight_recorder::FrState::kScheduled) {
        ++scheduled;
        EXPECT_NE(e.profiling_name, "nccl:coalesced") << path << " record " << e.record_id;
      } else {
        EXPECT_EQ(e.state, flight_recorder::FrState::kCompleted)
            << path << " record " << e.record_id;
      }
      ASSERT_LT(static_cast<size_t>(e.pg_id), rank_dump.comms.size()) << path;
    }
    EXPECT_EQ(entries, operations) << path;
    // Dated when its rank was last seen alive, as torch's dumps are when written: readers take the
    // file's time as the snapshot's. Not before its newest entry, not after the job (120 s).
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    const int64_t mtime =
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    int64_t newest = 0;
    for (const flight_recorder::FrEntry& e : dump->entries) {
      newest = std::max({newest, e.time_created_ns, e.time_discovered_completed_ns.value_or(0)});
    }
    EXPECT_GE(mtime, newest) << path;
    EXPECT_LT(mtime - newest, int64_t{120'000'000'000}) << path;
    EXPECT_EQ(scheduled, grouped) << path;
    EXPECT_GT(grouped, 0u) << "the scenario groups its pipelines";
    ASSERT_FALSE(dump->pg_config.empty());
    EXPECT_EQ(dump->pg_config[0].name, "0");
    EXPECT_EQ(dump->pg_config[0].ranks, (std::vector<int>{0, 1, 2, 3}));
    for (const auto& pg : dump->pg_config) {
      EXPECT_NE(std::find(pg.ranks.begin(), pg.ranks.end(), rank), pg.ranks.end())
          << path << " lists pg " << pg.name << " without being a member";
    }
  }

  // The JSON form: the same files, readable as JSON.
  const std::string json_out = dir / "fr-json";
  const ProcessResult j = FrExport({dir.path(), "-o", json_out, "--format", "json", "--prefix",
                                    "trace_", "--version", "2.4", "--buffer-size", "5"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json t = nlohmann::json::parse(ReadFile(json_out + "/trace_2"));
  EXPECT_EQ(t["version"], "2.4");
  EXPECT_EQ(t["entries"].size(), 5u);
}

TEST(CliFrExport, UnusableInputExitsThreeNamingTheProblem) {
  ScratchDir dir;
  ProcessResult r = FrExport({dir / "missing", "-o", dir / "out"});
  EXPECT_EQ(r.exit_code, kUnusableInput);
  EXPECT_NE(r.err.find(dir / "missing"), std::string::npos) << r.err;

  r = FrExport({dir.path(), "-o", dir / "out"});  // a directory without ring files
  EXPECT_EQ(r.exit_code, kUnusableInput);
  EXPECT_NE(r.err.find("no readable ring file"), std::string::npos) << r.err;

  r = FrExport({dir.path(), "-o", dir / "out", "--version", "3.0"});
  EXPECT_EQ(r.exit_code, kUnusableInput);
  EXPECT_NE(r.err.find("--version '3.0'"), std::string::npos) << r.err;

  r = FrExport({dir.path(), "-o", dir / "out", "--prefix", "a/b"});
  EXPECT_EQ(r.exit_code, kUnusableInput);
  EXPECT_NE(r.err.find("--prefix 'a/b'"), std::string::npos) << r.err;

  r = FrExport({dir.path(), "-o", dir / "out", "--format", "yaml"});
  EXPECT_EQ(r.exit_code, kUnusableInput);
}

}  // namespace
}  // namespace ncclscope::testing
