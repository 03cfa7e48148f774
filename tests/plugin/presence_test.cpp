// The presence file (plugin/core/presence.h): who writes one, what the parent's environment says,
// and how it ends: replaced at the first NCCL call, marked at exit, never touched by a forked
// child.
#include "plugin/core/presence.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include "plugin/core/proc_environ.h"
#include "trace/ring_layout.h"
#include "trace/ring_reader.h"

namespace ncclscope::plugin {
namespace {

TEST(StandsForItsRank, ARankWithAJobSizeWhoseParentIsNoRank) {
  EXPECT_TRUE(StandsForItsRank({3, 8}, LaunchRank{}));
  // The parent's environment could not be read (a launcher of root's): no rank there.
  EXPECT_TRUE(StandsForItsRank({3, 8}, std::nullopt));
  // torchrun under srun: the agent was started as rank 0 of the 2 nodes, its worker is rank 0
  // of 16.
  EXPECT_TRUE(StandsForItsRank({0, 16}, LaunchRank{0, 2}));
}

TEST(StandsForItsRank, NotAProcessTheRankStarted) {
  // A spawned data-loader worker, a compiler subprocess: the same rank of the same job above it.
  EXPECT_FALSE(StandsForItsRank({3, 8}, LaunchRank{3, 8}));
}

TEST(StandsForItsRank, NotWithoutARankOrAJobSize) {
  EXPECT_FALSE(StandsForItsRank({-1, 8}, std::nullopt));
  EXPECT_FALSE(StandsForItsRank({3, -1}, std::nullopt));
}

TEST(ParseEnviron, ReadsTheEntriesAsGetenvWould) {
  using namespace std::string_literals;
  const auto vars = ParseEnviron("RANK=3\0WORLD_SIZE=8\0EMPTY=\0A=b=c\0"s);
  EXPECT_EQ(vars, (std::map<std::string, std::string>{
                      {"RANK", "3"}, {"WORLD_SIZE", "8"}, {"EMPTY", ""}, {"A", "b=c"}}));
}

TEST(ParseEnviron, SkipsWhatIsNoEntryAndKeepsTheFirstOfAName) {
  using namespace std::string_literals;
  const auto vars = ParseEnviron("=x\0noequals\0\0RANK=1\0RANK=2\0LAST=cut"s);
  EXPECT_EQ(vars, (std::map<std::string, std::string>{{"RANK", "1"}, {"LAST", "cut"}}));
  EXPECT_TRUE(ParseEnviron("").empty());
}

TEST(ReadProcEnviron, ReadsAProcessStartingEnvironment) {
  std::string bytes, error;
  ASSERT_TRUE(ReadProcEnviron(static_cast<int>(getpid()), size_t{4} << 20, &bytes, &error))
      << error;
  const auto vars = ParseEnviron(bytes);
  const char* path = std::getenv("PATH");
  ASSERT_NE(path, nullptr);
  ASSERT_EQ(vars.count("PATH"), 1u);
  EXPECT_EQ(vars.at("PATH"), path);
}

TEST(ReadProcEnviron, SaysWhichFileAndWhy) {
  std::string bytes, error;
  EXPECT_FALSE(ReadProcEnviron(0x3fffffff, 1 << 20, &bytes, &error));
  EXPECT_EQ(error, "/proc/1073741823/environ: No such file or directory");
  EXPECT_FALSE(ReadProcEnviron(static_cast<int>(getpid()), 4, &bytes, &error));
  EXPECT_EQ(error, "/proc/" + std::to_string(getpid()) + "/environ: larger than 4 bytes");
}

class PresenceFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ncclscope-presence-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    env_ = {{"NCCLSCOPE_DIR", base_ + "/rings"},
            {"NCCLSCOPE_HOST", "nodeA"},
            {"RANK", "5"},
            {"WORLD_SIZE", "8"},
            {"LOCAL_RANK", "1"}};
  }
  void TearDown() override {
    RetirePresence();
    std::string cmd = "rm -rf '" + base_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  void Write(const std::string& parent_environ = "", bool parent_readable = true) {
    WritePresence(
        [this](const char* name) -> const char* {
          const auto it = env_.find(name);
          return it == env_.end() ? nullptr : it->second.c_str();
        },
        [&](std::string* bytes) {
          *bytes = parent_environ;
          return parent_readable;
        });
  }
  std::string Expected() const {
    return base_ + "/rings/nodeA-" + std::to_string(getpid()) + "-presence.ring";
  }
  std::optional<trace::RingSnapshot> Read() const {
    std::string error;
    return trace::ReadRingFile(Expected(), &error);
  }

  std::string base_;
  std::map<std::string, std::string> env_;
};

TEST_F(PresenceFile, ARankWritesOneWithItsIdentity) {
  using namespace std::string_literals;
  Write("PATH=/bin\0"s);
  ASSERT_EQ(PresencePath(), Expected());
  const auto s = Read();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->flags, trace::kHeaderPresence);
  EXPECT_EQ(s->global_rank, 5);
  EXPECT_EQ(s->world_size, 8);
  EXPECT_EQ(s->local_rank, 1);
  EXPECT_EQ(s->host, "nodeA");
  EXPECT_EQ(s->pid, getpid());
}

TEST_F(PresenceFile, TheFirstNcclCallRemovesIt) {
  Write();
  ASSERT_FALSE(PresencePath().empty());
  RetirePresence();
  EXPECT_TRUE(PresencePath().empty());
  EXPECT_NE(access(Expected().c_str(), F_OK), 0) << "still there";
  RetirePresence();  // once is all it takes; again is nothing
}

TEST_F(PresenceFile, AnExitBeforeAnyNcclCallMarksItFinished) {
  Write();
  MarkPresenceExited();
  const auto s = Read();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->flags, trace::kHeaderPresence | trace::kHeaderFinished);
  EXPECT_TRUE(PresencePath().empty());
}

TEST_F(PresenceFile, AForkedChildNeitherRemovesNorMarksItsParents) {
  Write();
  const pid_t child = fork();
  if (child == 0) {
    // The child: its first NCCL call and its exit must leave the parent's file alone.
    const bool forgot = PresencePath().empty();
    RetirePresence();
    MarkPresenceExited();
    _exit(forgot ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child kept the parent's file";
  const auto s = Read();
  ASSERT_TRUE(s.has_value()) << "the child removed its parent's presence file";
  EXPECT_EQ(s->flags, trace::kHeaderPresence);
  EXPECT_EQ(PresencePath(), Expected());
}

TEST_F(PresenceFile, NoneForAProcessTheRankStarted) {
  using namespace std::string_literals;
  // Its parent was started as rank 5 of 8 (by Open MPI's variables: the rank set RANK itself).
  Write("OMPI_COMM_WORLD_RANK=5\0OMPI_COMM_WORLD_SIZE=8\0"s);
  EXPECT_TRUE(PresencePath().empty());
  EXPECT_FALSE(Read().has_value());
}

TEST_F(PresenceFile, OneWhereTheParentCannotBeRead) {
  Write("", /*parent_readable=*/false);
  EXPECT_EQ(PresencePath(), Expected());
}

TEST_F(PresenceFile, NoneWhenSwitchedOffOrWithoutAJobSize) {
  env_["NCCLSCOPE_PRESENCE"] = "0";
  Write();
  EXPECT_TRUE(PresencePath().empty());
  env_.erase("NCCLSCOPE_PRESENCE");
  env_["NCCLSCOPE_ENABLE"] = "0";
  Write();
  EXPECT_TRUE(PresencePath().empty());
  env_.erase("NCCLSCOPE_ENABLE");
  env_.erase("WORLD_SIZE");
  Write();
  EXPECT_TRUE(PresencePath().empty());
  EXPECT_FALSE(Read().has_value());
}

}  // namespace
}  // namespace ncclscope::plugin
