// The probe fails open: with a trace directory it cannot write to, or one that is full, the job
// runs exactly as without ncclscope, and each rank says once, on stderr, why nothing is recorded.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"

namespace ncclscope::testing {
namespace {

constexpr int kBadDirRanks = 4;
constexpr int kMountFailed = 97;

// Mounts a tmpfs with `options` over `dir` in a private mount namespace (invisible to the rest of
// the machine, gone when the job ends), then runs the job there.
ProcessResult SimOverTmpfs(const std::string& dir, const std::string& options) {
  const std::string script = "mount -t tmpfs -o " + options + " ncclscope-e2e \"$0\" || exit " +
                             std::to_string(kMountFailed) + "; exec \"$@\"";
  return RunProcess({"unshare", "-m", "--propagation", "private", "sh", "-c", script, dir, Cli(),
                     "sim", "--ranks", std::to_string(kBadDirRanks), "--scenario",
                     ScenarioPath("healthy.json"), "--dir", dir, "--timeout", "30"},
                    {}, 60);
}

int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class BadTraceDir : public ::testing::TestWithParam<const char*> {};

TEST_P(BadTraceDir, JobCompletesAndEachRankWarnsOnce) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  const ProcessResult p = SimOverTmpfs(dir, GetParam());
  if (p.exit_code == 127 || p.exit_code == kMountFailed ||
      (p.exit_code != 0 && p.err.rfind("unshare:", 0) == 0)) {
    GTEST_SKIP() << "needs a private mount namespace and tmpfs mounts (root): " << p.err;
  }
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("all 4 ranks finished with correct results"), std::string::npos) << p.out;
  EXPECT_EQ(Occurrences(p.err, "ncclscope: warning:"), kBadDirRanks) << p.err;
  for (int r = 0; r < kBadDirRanks; ++r) {
    EXPECT_EQ(Occurrences(p.err, "[rank " + std::to_string(r) + "] ncclscope: warning:"), 1)
        << p.err;
  }
  EXPECT_NE(p.err.find(dir), std::string::npos) << "the warning names the directory\n" << p.err;
}

INSTANTIATE_TEST_SUITE_P(Tmpfs, BadTraceDir,
                         ::testing::Values("ro,mode=0700", "size=64k,mode=0700"),
                         [](const auto& info) {
                           return std::string(info.index == 0 ? "ReadOnly" : "Full64KiB");
                         });

}  // namespace
}  // namespace ncclscope::testing
