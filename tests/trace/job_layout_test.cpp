// One job, one trace: the job id every task of one launch computes alike, the host name a node's
// files carry, and the <base>/<job>/<host> directories, private at every level we create.
#include "trace/job_layout.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include "tests/trace/temp_dir.h"
#include "trace/ring_reader.h"
#include "trace/ring_writer.h"
#include "trace/trace_dir.h"

namespace ncclscope::trace {
namespace {

// EnvFn is a plain function pointer (the probe passes getenv): the fake reads a global map.
std::map<std::string, std::string> g_env;
const char* FakeEnv(const char* name) {
  const auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}
std::string JobFrom(std::map<std::string, std::string> vars) {
  g_env = std::move(vars);
  return LauncherJobId(FakeEnv);
}

TEST(LauncherJobId, SrunTasksNameTheJobAndTheirStep) {
  // What srun puts into every task of step 0 of job 1234 (src/common/env.c, env_array_for_step).
  EXPECT_EQ(JobFrom({{"SLURM_JOB_ID", "1234"}, {"SLURM_STEP_ID", "0"}, {"SLURM_STEPID", "0"}}),
            "1234.0");
  // A batch script (no step yet) and the obsolete spellings.
  EXPECT_EQ(JobFrom({{"SLURM_JOB_ID", "1234"}}), "1234");
  EXPECT_EQ(JobFrom({{"SLURM_JOBID", "99"}, {"SLURM_STEPID", "3"}}), "99.3");
  // A step id that is not a number is not glued on.
  EXPECT_EQ(JobFrom({{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "x"}}), "7");
}

TEST(LauncherJobId, SlurmThenTorchelasticAndTorchrunsDefaultIsNoName) {
  EXPECT_EQ(JobFrom({{"SLURM_JOB_ID", "5"}, {"TORCHELASTIC_RUN_ID", "run9"}}), "5");
  EXPECT_EQ(JobFrom({{"TORCHELASTIC_RUN_ID", "run9"}}), "run9");
  // torchrun's --rdzv-id defaults to "none": every such job would share it.
  EXPECT_EQ(JobFrom({{"TORCHELASTIC_RUN_ID", "none"}}), "");
  EXPECT_EQ(JobFrom({{"SLURM_JOB_ID", ""}}), "");
}

TEST(LauncherJobId, KubernetesEnvironmentsNameNoJob) {
  // A Kubeflow PyTorchJob worker (training-operator's setPodEnv, elastic policy without rdzvId)
  // and an indexed Job's pod: nothing in them names the job, so nothing is guessed.
  EXPECT_EQ(JobFrom({{"MASTER_ADDR", "bert-master-0"},
                     {"MASTER_PORT", "23456"},
                     {"RANK", "3"},
                     {"WORLD_SIZE", "8"},
                     {"PET_NNODES", "2"},
                     {"PET_RDZV_ENDPOINT", "bert-worker-0:23456"}}),
            "");
  EXPECT_EQ(JobFrom({{"JOB_COMPLETION_INDEX", "3"}}), "");
}

TEST(SafePathComponent, KeepsOneHarmlessComponent) {
  EXPECT_EQ(SafePathComponent("1234.0", "local"), "1234.0");
  EXPECT_EQ(SafePathComponent("../../etc/x y", "local"), ".._.._etc_x_y");
  EXPECT_EQ(SafePathComponent("..", "local"), "local");
  EXPECT_EQ(SafePathComponent("", "local"), "local");
  EXPECT_EQ(SafePathComponent(std::string(200, 'a'), "local").size(), 63u);
}

TEST(ThisHostName, AnOverrideWinsOverTheHostName) {
  g_env = {{"NCCLSCOPE_HOST", "node7"}};
  EXPECT_EQ(ThisHostName(FakeEnv), "node7");
  g_env = {{"NCCLSCOPE_HOST", "a/b"}};
  EXPECT_EQ(ThisHostName(FakeEnv), "a_b");
  g_env = {};
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  EXPECT_EQ(ThisHostName(FakeEnv), SafePathComponent(host, "unknown-host"));
}

TEST(DefaultBaseDir, IsPerUserUnderTmpdir) {
  g_env = {{"TMPDIR", "/scratch"}};
  EXPECT_EQ(DefaultBaseDir(FakeEnv), "/scratch/ncclscope-" + std::to_string(getuid()));
  g_env = {};
  EXPECT_EQ(DefaultBaseDir(FakeEnv), "/tmp/ncclscope-" + std::to_string(getuid()));
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_mode & 0777 : 0;
}

TEST(EnsurePrivateSubdirs, EveryLevelWeCreateIsPrivate) {
  testing::TempDir tmp;
  const std::string base = tmp.path() + "/a/base";
  std::string dir, error;
  ASSERT_TRUE(EnsurePrivateSubdirs(base, true, {"1234.0", "node0"}, &dir, &error)) << error;
  EXPECT_EQ(dir, JobHostDir(base, "1234.0", "node0"));
  EXPECT_EQ(ModeOf(tmp.path() + "/a"), 0700u);
  EXPECT_EQ(ModeOf(base), 0700u);
  EXPECT_EQ(ModeOf(base + "/1234.0"), 0700u);
  EXPECT_EQ(ModeOf(dir), 0700u);
  // Twice is fine: every task of a node runs it.
  EXPECT_TRUE(EnsurePrivateSubdirs(base, true, {"1234.0", "node0"}, &dir, &error)) << error;
}

TEST(EnsurePrivateSubdirs, ANamedBaseMayBeSharedButNotWhatIsBelowIt) {
  testing::TempDir tmp;
  const std::string base = tmp.path() + "/group";
  ASSERT_EQ(mkdir(base.c_str(), 0700), 0);
  ASSERT_EQ(chmod(base.c_str(), 0775), 0);
  std::string dir, error;
  EXPECT_TRUE(EnsurePrivateSubdirs(base, false, {"j", "h"}, &dir, &error)) << error;
  EXPECT_EQ(ModeOf(base), 0775u);  // the user's directory is left as it is
  EXPECT_EQ(ModeOf(base + "/j"), 0700u);
  // The default base lies in the shared /tmp: it must be private itself.
  EXPECT_FALSE(EnsurePrivateSubdirs(base, true, {"j", "h"}, &dir, &error));
  EXPECT_NE(error.find("mode 775"), std::string::npos) << error;
  // A job directory opened to others is refused, naming it.
  ASSERT_EQ(chmod((base + "/j").c_str(), 0755), 0);
  EXPECT_FALSE(EnsurePrivateSubdirs(base, false, {"j", "h"}, &dir, &error));
  EXPECT_EQ(error, base + "/j: accessible by other users (mode 755); expected 0700");
}

TEST(EnsurePrivateSubdirs, AnotherUsersSymlinkAtAnyLevelIsNotFollowed) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a link to another user";
  constexpr uid_t kNobody = 65534;
  testing::TempDir tmp;
  const std::string elsewhere = tmp.path() + "/elsewhere";
  ASSERT_EQ(mkdir(elsewhere.c_str(), 0700), 0);
  const std::string base = tmp.path() + "/base";
  ASSERT_EQ(mkdir(base.c_str(), 0700), 0);
  // Someone else planted the job level, pointing at a directory of ours.
  ASSERT_EQ(symlink(elsewhere.c_str(), (base + "/job").c_str()), 0);
  ASSERT_EQ(lchown((base + "/job").c_str(), kNobody, kNobody), 0);
  std::string dir, error;
  EXPECT_FALSE(EnsurePrivateSubdirs(base, false, {"job", "host"}, &dir, &error));
  EXPECT_EQ(error, base + "/job: symlink owned by uid 65534, not by this user or root");
  struct stat st {};
  EXPECT_NE(stat((elsewhere + "/host").c_str(), &st), 0) << "went through the link";
  // And at the base, even one the user named.
  const std::string link_base = tmp.path() + "/link-base";
  ASSERT_EQ(symlink(elsewhere.c_str(), link_base.c_str()), 0);
  ASSERT_EQ(lchown(link_base.c_str(), kNobody, kNobody), 0);
  EXPECT_FALSE(EnsurePrivateSubdirs(link_base, false, {"job", "host"}, &dir, &error));
  EXPECT_EQ(error, link_base + ": symlink owned by uid 65534, not by this user or root");
}

TEST(RingWriterHost, TheHostGivenNamesTheFileAndTheHeader) {
  testing::TempDir tmp;
  RingOptions o;
  o.dir = tmp.path();
  o.record_capacity = 64;
  o.host = "node3";
  std::string error;
  auto w = RingWriter::Create(o, &error);
  ASSERT_TRUE(w) << error;
  const std::string name = w->path().substr(tmp.path().size() + 1);
  EXPECT_EQ(name.rfind("node3-" + std::to_string(getpid()) + "-", 0), 0u) << name;
  const auto snap = ReadRingFile(w->path(), &error);
  ASSERT_TRUE(snap) << error;
  EXPECT_EQ(snap->host, "node3");
}

}  // namespace
}  // namespace ncclscope::trace
