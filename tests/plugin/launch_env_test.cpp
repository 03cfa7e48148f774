#include "plugin/core/launch_env.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>

namespace ncclscope::plugin {
namespace {

EnvLookup Lookup(const std::map<std::string, std::string>& vars) {
  return [&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(LaunchEnvTest, TorchrunWinsOverSlurm) {
  const std::map<std::string, std::string> vars = {{"RANK", "3"},          {"LOCAL_RANK", "1"},
                                                   {"WORLD_SIZE", "8"},    {"SLURM_PROCID", "5"},
                                                   {"SLURM_NTASKS", "16"}, {"SLURM_JOB_ID", "77"}};
  std::vector<std::string> warnings;
  const LaunchIdentity id = ReadLaunchIdentity(Lookup(vars), Config{}, &warnings);
  EXPECT_EQ(id.global_rank, 3);
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.world_size, 8);
  EXPECT_EQ(id.job_id, "77");
  EXPECT_TRUE(warnings.empty());
}

TEST(LaunchEnvTest, MpiAndPmiFallbacks) {
  const std::map<std::string, std::string> vars = {
      {"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"PMI_SIZE", "4"}};
  std::vector<std::string> warnings;
  const LaunchIdentity id = ReadLaunchIdentity(Lookup(vars), Config{}, &warnings);
  EXPECT_EQ(id.global_rank, 2);
  EXPECT_EQ(id.local_rank, 0);
  EXPECT_EQ(id.world_size, 4);
  EXPECT_EQ(id.job_id, "local");
}

TEST(LaunchEnvTest, BadRankIsReportedAndIgnored) {
  const std::map<std::string, std::string> vars = {{"RANK", "abc"}, {"PMI_RANK", "6"}};
  std::vector<std::string> warnings;
  const LaunchIdentity id = ReadLaunchIdentity(Lookup(vars), Config{}, &warnings);
  EXPECT_EQ(id.global_rank, 6);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("RANK='abc'"), std::string::npos);
}

// torchrun restarts a job into the same directory: each run's files say which run they are.
TEST(LaunchEnvTest, TorchrunsRestartCountNamesTheRun) {
  const std::map<std::string, std::string> vars = {{"RANK", "1"},
                                                   {"TORCHELASTIC_RESTART_COUNT", "2"}};
  std::vector<std::string> warnings;
  EXPECT_EQ(ReadLaunchIdentity(Lookup(vars), Config{}, &warnings).restart, 2u);
  EXPECT_TRUE(warnings.empty());
  const std::map<std::string, std::string> bad = {{"TORCHELASTIC_RESTART_COUNT", "-1"}};
  EXPECT_EQ(ReadLaunchIdentity(Lookup(bad), Config{}, &warnings).restart, 0u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("TORCHELASTIC_RESTART_COUNT='-1'"), std::string::npos);
}

// A typo or a corrupt environment must not reach the ring header, where readers would take it for
// the number of ranks to account for.
TEST(LaunchEnvTest, ImplausibleWorldSizesAndRanksAreReportedAndIgnored) {
  const std::map<std::string, std::string> vars = {{"WORLD_SIZE", "2000000"},
                                                   {"SLURM_NTASKS", "2147483647"},
                                                   {"PMI_SIZE", "16"},
                                                   {"RANK", "2147483647"},
                                                   {"SLURM_PROCID", "3"}};
  std::vector<std::string> warnings;
  const LaunchIdentity id = ReadLaunchIdentity(Lookup(vars), Config{}, &warnings);
  EXPECT_EQ(id.world_size, 16);
  EXPECT_EQ(id.global_rank, 3);
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_NE(warnings[0].find("RANK='2147483647' is beyond any job"), std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[1].find("WORLD_SIZE='2000000' is beyond any job (more than 1048576 ranks)"),
            std::string::npos)
      << warnings[1];
  EXPECT_NE(warnings[2].find("SLURM_NTASKS='2147483647'"), std::string::npos) << warnings[2];
}

TEST(LaunchEnvTest, TheLargestPlausibleWorldIsKept) {
  const std::map<std::string, std::string> vars = {{"WORLD_SIZE", "1048576"}, {"RANK", "1048575"}};
  std::vector<std::string> warnings;
  const LaunchIdentity id = ReadLaunchIdentity(Lookup(vars), Config{}, &warnings);
  EXPECT_EQ(id.world_size, 1048576);
  EXPECT_EQ(id.global_rank, 1048575);
  EXPECT_TRUE(warnings.empty());
}

TEST(LaunchEnvTest, JobIdIsOnePathComponent) {
  Config config;
  config.job_id = "../../etc/x y";
  std::vector<std::string> warnings;
  const LaunchIdentity id = ReadLaunchIdentity(Lookup({}), config, &warnings);
  EXPECT_EQ(id.job_id.find('/'), std::string::npos);
  EXPECT_EQ(id.job_id.find(' '), std::string::npos);
}

TEST(LaunchEnvTest, DefaultDirIsPerJobAndNodeUnderTmpdirUid) {
  const std::map<std::string, std::string> vars = {
      {"TMPDIR", "/scratch"}, {"TORCHELASTIC_RUN_ID", "run9"}, {"NCCLSCOPE_HOST", "node2"}};
  std::vector<std::string> warnings;
  Config config;
  config.host = "node2";  // as ParseConfig reads NCCLSCOPE_HOST
  const LaunchIdentity id = ReadLaunchIdentity(Lookup(vars), config, &warnings);
  EXPECT_EQ(id.host, "node2");
  EXPECT_EQ(TraceDir(Lookup(vars), config, id),
            "/scratch/ncclscope-" + std::to_string(getuid()) + "/run9/node2");
  config.base_dir = "/lustre/traces";
  EXPECT_EQ(TraceDir(Lookup(vars), config, id), "/lustre/traces/run9/node2");
  // NCCLSCOPE_DIR keeps its meaning: exactly that directory.
  config.dir = "/explicit";
  EXPECT_EQ(TraceDir(Lookup(vars), config, id), "/explicit");
}

TEST(LaunchEnvTest, SrunTasksShareTheJobAndStep) {
  const std::map<std::string, std::string> vars = {
      {"SLURM_JOB_ID", "1234"}, {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "9"}};
  std::vector<std::string> warnings;
  EXPECT_EQ(ReadLaunchIdentity(Lookup(vars), Config{}, &warnings).job_id, "1234.0");
  // NCCLSCOPE_JOB_ID (config) wins over every launcher.
  Config config;
  config.job_id = "mine";
  EXPECT_EQ(ReadLaunchIdentity(Lookup(vars), config, &warnings).job_id, "mine");
}

TEST(LaunchEnvTest, HostDefaultsToTheHostNameAndIsOneComponent) {
  std::vector<std::string> warnings;
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  EXPECT_EQ(ReadLaunchIdentity(Lookup({}), Config{}, &warnings).host, host);
  Config config;
  config.host = "../pod 1";
  EXPECT_EQ(ReadLaunchIdentity(Lookup({}), config, &warnings).host, ".._pod_1");
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 0777 : 0;
}

TEST(LaunchEnvTest, MakeTraceDirCreatesEachLevelPrivate) {
  char tmpl[] = "/tmp/ncclscope-launch-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string tmp = tmpl;
  const std::map<std::string, std::string> vars = {{"TMPDIR", tmp}, {"SLURM_JOB_ID", "77"}};
  std::vector<std::string> warnings;
  Config config;
  config.host = "nodeA";
  const LaunchIdentity id = ReadLaunchIdentity(Lookup(vars), config, &warnings);
  std::string dir, error;
  ASSERT_TRUE(MakeTraceDir(Lookup(vars), config, id, &dir, &error)) << error;
  const std::string base = tmp + "/ncclscope-" + std::to_string(getuid());
  EXPECT_EQ(dir, base + "/77/nodeA");
  EXPECT_EQ(ModeOf(base), 0700u);
  EXPECT_EQ(ModeOf(base + "/77"), 0700u);
  EXPECT_EQ(ModeOf(dir), 0700u);
  // The default base sits in a shared directory: opened to others, it is refused.
  ASSERT_EQ(chmod(base.c_str(), 0777), 0);
  EXPECT_FALSE(MakeTraceDir(Lookup(vars), config, id, &dir, &error));
  EXPECT_NE(error.find("mode 777"), std::string::npos) << error;
  for (const std::string& d : {base + "/77/nodeA", base + "/77", base, tmp}) rmdir(d.c_str());
}

}  // namespace
}  // namespace ncclscope::plugin
