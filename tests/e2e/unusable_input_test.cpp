// `ncclscope analyze` on a directory it cannot use (empty, only damaged ring files, not a
// directory): exit 3 and one line on stderr naming the directory and why, in text, --json and
// --watch alike; never a crash.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"
#include "tests/e2e/synthetic_ring.h"

namespace ncclscope::testing {
namespace {

struct Mode {
  const char* name;
  std::vector<std::string> flags;
};

const Mode kModes[] = {{"text", {}},
                       {"json", {"--json"}},
                       {"watch", {"--watch"}},
                       {"watch json", {"--watch", "--json"}}};

ProcessResult RunAnalyze(const std::string& dir, const Mode& mode) {
  std::vector<std::string> argv = {Cli(), "analyze", dir};
  argv.insert(argv.end(), mode.flags.begin(), mode.flags.end());
  return RunProcess(argv, {}, 30);
}

// Exit 3, not a signal, and stderr says `why` about `dir`; JSON output stays a valid document.
void ExpectUnusable(const ProcessResult& p, const Mode& mode, const std::string& dir,
                    const std::string& why) {
  SCOPED_TRACE(mode.name);
  EXPECT_FALSE(p.timed_out);
  EXPECT_EQ(p.exit_code, kUnusableInput) << p.err;
  EXPECT_NE(p.err.find("ncclscope analyze: " + dir), std::string::npos) << p.err;
  EXPECT_NE(p.err.find(why), std::string::npos) << p.err;
  const bool json = std::string(mode.name).find("json") != std::string::npos;
  if (json && !p.out.empty()) {
    const auto doc = nlohmann::json::parse(p.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << p.out;
    EXPECT_FALSE(doc["usable"].get<bool>());
    EXPECT_EQ(doc["exit_code"], kUnusableInput);
  }
}

TEST(AnalyzeUnusableInput, EmptyDirectory) {
  ScratchDir scratch;
  for (const Mode& mode : kModes) {
    const bool watch = !mode.flags.empty() && mode.flags.front() == "--watch";
    if (watch) continue;  // --watch waits: see the test below
    const ProcessResult p = RunAnalyze(scratch.path(), mode);
    ExpectUnusable(p, mode, scratch.path(), "no ring file (*.ring) in it");
    if (mode.flags.empty()) {
      EXPECT_NE(p.out.find("UNUSABLE"), std::string::npos) << p.out;
    }
  }
}

// --watch is started together with the job, so an empty directory is the job not writing yet.
TEST(AnalyzeUnusableInput, WatchWaitsForTheFirstRingFileOfAnEmptyDirectory) {
  ScratchDir scratch;
  const ProcessResult p = RunProcess({Cli(), "analyze", scratch.path(), "--watch"}, {}, 3);
  EXPECT_TRUE(p.timed_out);
  EXPECT_NE(p.err.find("waiting for ring files in " + scratch.path()), std::string::npos) << p.err;
}

TEST(AnalyzeUnusableInput, OnlyDamagedRingFiles) {
  ScratchDir scratch;
  const std::string& dir = scratch.path();
  const std::string garbage = scratch / "garbage.ring";
  std::ofstream(garbage) << std::string(9000, 'x');
  const std::string truncated = WriteSyntheticRing(dir, 0, 2);
  ASSERT_FALSE(truncated.empty());
  std::filesystem::resize_file(truncated, 6000);
  for (const Mode& mode : kModes) {
    const ProcessResult p = RunAnalyze(dir, mode);
    ExpectUnusable(p, mode, dir, "2 *.ring file(s), none readable");
    EXPECT_NE(p.err.find(garbage + ": not an ncclscope ring file (bad magic)"), std::string::npos)
        << p.err;
  }
  // The text report lists every unreadable file.
  const ProcessResult text = RunAnalyze(dir, kModes[0]);
  EXPECT_NE(text.out.find("input: unreadable " + truncated + ": truncated"), std::string::npos)
      << text.out;
}

TEST(AnalyzeUnusableInput, NotADirectory) {
  ScratchDir scratch;
  const std::string file = scratch / "not-a-dir";
  std::ofstream(file) << "x";
  for (const Mode& mode : kModes) {
    ExpectUnusable(RunAnalyze(file, mode), mode, file, "Not a directory");
  }
}

TEST(AnalyzeUnusableInput, UnreadableDirectory) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads any directory";
  ScratchDir scratch;
  const std::string dir = scratch / "locked";
  std::filesystem::create_directory(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::none);
  for (const Mode& mode : kModes) {
    ExpectUnusable(RunAnalyze(dir, mode), mode, dir, "Permission denied");
  }
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
}

}  // namespace
}  // namespace ncclscope::testing
