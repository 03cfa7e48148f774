// Two jobs in one trace directory (a reused NCCLSCOPE_DIR): `ncclscope analyze` correlates one of
// them, says in one line what it ignored, and never blames the other job's ranks. Job A crashes
// (rank 1 SIGKILLed, the others waiting for it until the launcher kills them after 5 s: a dead
// verdict on its own), then job B runs clean in the same directory: B's heartbeats are the newest,
// whatever the machine's load.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "tests/e2e/cli.h"
#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"

namespace ncclscope::testing {
namespace {

// `ncclscope sim` says which job it started: "... job sim-<tag>, trace dir ...".
std::string JobOf(const ProcessResult& sim) {
  std::smatch m;
  const bool found = std::regex_search(sim.out, m, std::regex("job (sim-[0-9a-f]+)"));
  EXPECT_TRUE(found) << sim.out;
  return found ? m[1].str() : "";
}

nlohmann::json AnalyzeWithExit(const std::string& dir, const std::vector<std::string>& extra,
                               int* exit_code) {
  std::vector<std::string> argv = {Cli(), "analyze", dir, "--json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const ProcessResult p = RunProcess(argv);
  *exit_code = p.exit_code;
  auto j = nlohmann::json::parse(p.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << p.out << p.err;
  return j;
}

bool HasClass(const nlohmann::json& analysis, const std::string& cls) {
  for (const auto& v : analysis.at("verdicts")) {
    if (v.at("class") == cls) return true;
  }
  return false;
}

std::string Notes(const nlohmann::json& analysis) {
  std::string all;
  for (const auto& n : analysis.at("input").at("notes")) all += n.get<std::string>() + "\n";
  return all;
}

TEST(TwoJobsInOneDirectory, AnalyzeKeepsTheNewestJobAndSaysWhatItIgnored) {
  ScratchDir scratch;
  const std::string dir = scratch / "trace";
  const ProcessResult crashed = RunSim("crash-sigkill.json", 4, dir, 5);
  ASSERT_EQ(crashed.exit_code, 1) << crashed.out << crashed.err;
  const ProcessResult healthy = RunSim("healthy.json", 4, dir, 30);
  ASSERT_EQ(healthy.exit_code, 0) << healthy.out << healthy.err;
  const std::string job_a = JobOf(crashed);
  const std::string job_b = JobOf(healthy);
  ASSERT_NE(job_a, job_b);

  int rc = -1;
  const nlohmann::json b = AnalyzeWithExit(dir, {}, &rc);
  EXPECT_EQ(rc, 0) << b.dump(2);
  EXPECT_FALSE(HasClass(b, "dead")) << "job A's ranks blamed in job B: " << b.dump(2);
  EXPECT_EQ(b.at("input").at("files"), 4) << b.dump(2);
  EXPECT_NE(Notes(b).find("ignored 4 ring file(s) of job " + job_a + " (kept job " + job_b +
                          ", the newest heartbeat)"),
            std::string::npos)
      << Notes(b);

  // The text form says it too, on one input line.
  const ProcessResult text = RunProcess({Cli(), "analyze", dir});
  EXPECT_NE(text.out.find("input: ignored 4 ring file(s) of job " + job_a), std::string::npos)
      << text.out;

  // Asked for, the crashed job is analysed alone: rank 1 is dead, job B's files are left out.
  const nlohmann::json a = AnalyzeWithExit(dir, {"--job", job_a, "--job-ended"}, &rc);
  EXPECT_EQ(rc, 2) << a.dump(2);
  EXPECT_TRUE(HasClass(a, "dead")) << a.dump(2);
  EXPECT_NE(Notes(a).find("ignored 4 ring file(s) of job " + job_b + " (kept job " + job_a +
                          ", as asked)"),
            std::string::npos)
      << Notes(a);
}

}  // namespace
}  // namespace ncclscope::testing
