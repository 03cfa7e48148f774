// `srun -n 8 ncclscope run -- python train.py`: eight tasks of one launch, each starting in its own
// second, must put the job in one directory, <base>/<job>/<host>, the job named by the launcher.
// The job here is a shell that prints what the probe would be told, in place of a training script.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/e2e/subprocess.h"

namespace ncclscope::testing {
namespace {

// What the probe in the job would read, as "base|job|dir".
constexpr char kShowEnv[] =
    "echo \"${NCCLSCOPE_BASE_DIR-}|${NCCLSCOPE_JOB_ID-}|${NCCLSCOPE_DIR-unset}\"";

// `ncclscope run` in `cwd` with no launcher variable but `env`'s (the test's own environment may
// come from a real scheduler).
ProcessResult RunTask(const std::string& cwd, const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {"env"};
  for (const char* var :
       {"NCCLSCOPE_DIR", "NCCLSCOPE_BASE_DIR", "NCCLSCOPE_JOB_ID", "NCCLSCOPE_HOST", "SLURM_JOB_ID",
        "SLURM_JOBID", "SLURM_STEP_ID", "SLURM_STEPID", "TORCHELASTIC_RUN_ID"}) {
    if (env.count(var) == 0) argv.insert(argv.end(), {"-u", var});
  }
  argv.insert(argv.end(), {"sh", "-c", "cd \"$0\" && exec \"$@\"", cwd, Cli(), "run", "--", "sh",
                           "-c", kShowEnv});
  return RunProcess(argv, env, 30);
}

std::string TraceLine(const ProcessResult& p) {
  std::smatch m;
  const bool found = std::regex_search(p.err, m, std::regex("ncclscope: trace in (\\S+)"));
  EXPECT_TRUE(found) << p.err;
  return found ? m[1].str() : "";
}

std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    out.insert(e.path().filename().string());
  }
  return out;
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 0777 : 0;
}

TEST(RunLayout, EightTasksOfOneSrunStepStartedInDifferentSecondsShareOneDirectory) {
  ScratchDir scratch;
  std::vector<ProcessResult> tasks;
  for (int task = 0; task < 8; ++task) {
    // Half the tasks a whole second later than the others: a name from the start time would
    // split the job in two.
    if (task == 4) std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    tasks.push_back(RunTask(scratch.path(), {{"SLURM_JOB_ID", "4242"},
                                             {"SLURM_STEP_ID", "0"},
                                             {"SLURM_PROCID", std::to_string(task)},
                                             {"SLURM_LOCALID", std::to_string(task)},
                                             {"NCCLSCOPE_HOST", "node0"}}));
  }
  const std::string base = scratch / "ncclscope";
  const std::string dir = base + "/4242.0/node0";
  for (const ProcessResult& t : tasks) {
    ASSERT_EQ(t.exit_code, 0) << t.out << t.err;
    EXPECT_EQ(TraceLine(t), dir);
    // The job is told base and job, so each process adds its own host (a launcher started by
    // `run` may place ranks on other nodes); never one node's directory.
    EXPECT_EQ(t.out, base + "|4242.0|unset\n");
  }
  EXPECT_EQ(Entries(base), std::set<std::string>{"4242.0"});
  EXPECT_EQ(Entries(base + "/4242.0"), std::set<std::string>{"node0"});
  EXPECT_EQ(ModeOf(base + "/4242.0"), 0700u);
  EXPECT_EQ(ModeOf(dir), 0700u);
}

TEST(RunLayout, ALaunchWithoutAJobIdIsNamedByItsStartTime) {
  ScratchDir scratch;
  const ProcessResult p = RunTask(scratch.path(), {{"NCCLSCOPE_HOST", "box"}});
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  const std::string line = TraceLine(p);
  EXPECT_TRUE(std::regex_match(line, std::regex(scratch / "ncclscope/[0-9]{8}-[0-9]{6}/box")))
      << line;
}

TEST(RunLayout, AnExplicitBaseOrJobIdIsUsedAndAnExactDirectoryWins) {
  ScratchDir scratch;
  const std::string base = scratch / "shared";
  ProcessResult p = RunTask(scratch.path(), {{"NCCLSCOPE_BASE_DIR", base},
                                             {"NCCLSCOPE_JOB_ID", "exp/7"},
                                             {"TORCHELASTIC_RUN_ID", "r1"},
                                             {"NCCLSCOPE_HOST", "h"}});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(TraceLine(p), base + "/exp_7/h");
  p = RunTask(scratch.path(), {{"NCCLSCOPE_DIR", scratch / "exact"}, {"SLURM_JOB_ID", "9"}});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(TraceLine(p), scratch / "exact");
  EXPECT_EQ(p.out, "||" + (scratch / "exact") + "\n");
}

}  // namespace
}  // namespace ncclscope::testing
