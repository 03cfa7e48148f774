#include "plugin/launch_env.h"

#include <gtest/gtest.h>
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

TEST(LaunchEnvTest, DefaultDirUsesTmpdirUidAndJob) {
  const std::map<std::string, std::string> vars = {{"TMPDIR", "/scratch"},
                                                   {"TORCHELASTIC_RUN_ID", "run9"}};
  std::vector<std::string> warnings;
  Config config;
  const LaunchIdentity id = ReadLaunchIdentity(Lookup(vars), config, &warnings);
  EXPECT_EQ(TraceDir(Lookup(vars), config, id),
            "/scratch/ncclscope-" + std::to_string(getuid()) + "/run9");
  config.dir = "/explicit";
  EXPECT_EQ(TraceDir(Lookup(vars), config, id), "/explicit");
}

}  // namespace
}  // namespace ncclscope::plugin
