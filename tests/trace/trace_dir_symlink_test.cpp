// A trace directory given as a symlink (a link into a bigger disk) is followed, and its target
// passes the same owner and mode checks as a directory given directly; a refusal says exactly why,
// naming the link and where it points.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "tests/trace/temp_dir.h"
#include "trace/ring_writer.h"
#include "trace/trace_dir.h"

namespace ncclscope::trace {
namespace {

// Another user's uid, for the tests that need one; they run only as root, who can chown.
constexpr uid_t kNobody = 65534;

TEST(TraceDirSymlink, ALinkToAPrivateDirectoryIsFollowed) {
  testing::TempDir tmp;
  const std::string target = tmp.path() + "/disk";
  const std::string link = tmp.path() + "/traces";
  ASSERT_EQ(mkdir(target.c_str(), 0700), 0);
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  std::string error;
  EXPECT_TRUE(EnsurePrivateDir(link, &error)) << error;
  // And a writer given the link puts its ring in the target.
  RingOptions o;
  o.dir = link;
  o.record_capacity = 64;
  auto w = RingWriter::Create(o, &error);
  ASSERT_TRUE(w) << error;
  struct stat st {};
  EXPECT_EQ(stat((target + w->path().substr(link.size())).c_str(), &st), 0) << w->path();
}

TEST(TraceDirSymlink, ATargetOpenToOthersIsRefusedNamingLinkAndTarget) {
  testing::TempDir tmp;
  const std::string target = tmp.path() + "/shared";
  const std::string link = tmp.path() + "/traces";
  ASSERT_EQ(mkdir(target.c_str(), 0700), 0);
  ASSERT_EQ(chmod(target.c_str(), 0755), 0);
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  std::string error;
  EXPECT_FALSE(EnsurePrivateDir(link, &error));
  EXPECT_EQ(error, link + " (symlink to " + target +
                       "): accessible by other users (mode 755); expected 0700");
}

TEST(TraceDirSymlink, ADanglingLinkOrALinkToAFileSaysSo) {
  testing::TempDir tmp;
  const std::string dangling = tmp.path() + "/dangling";
  ASSERT_EQ(symlink((tmp.path() + "/gone").c_str(), dangling.c_str()), 0);
  std::string error;
  EXPECT_FALSE(EnsurePrivateDir(dangling, &error));
  EXPECT_EQ(error, dangling + " (symlink to " + tmp.path() + "/gone): No such file or directory");

  const std::string file = tmp.path() + "/file";
  std::ofstream(file) << "x";
  const std::string to_file = tmp.path() + "/to-file";
  ASSERT_EQ(symlink(file.c_str(), to_file.c_str()), 0);
  EXPECT_FALSE(EnsurePrivateDir(to_file, &error));
  EXPECT_EQ(error, to_file + " (symlink to " + file + "): not a directory");
}

TEST(TraceDirSymlink, AnotherUsersLinkOrTargetIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give files to another user";
  testing::TempDir tmp;
  const std::string target = tmp.path() + "/disk";
  const std::string link = tmp.path() + "/traces";
  ASSERT_EQ(mkdir(target.c_str(), 0700), 0);
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  ASSERT_EQ(lchown(link.c_str(), kNobody, kNobody), 0);
  std::string error;
  EXPECT_FALSE(EnsurePrivateDir(link, &error));
  EXPECT_EQ(error, link + ": symlink owned by uid 65534, not by this user or root");

  ASSERT_EQ(lchown(link.c_str(), 0, 0), 0);
  ASSERT_EQ(chown(target.c_str(), kNobody, kNobody), 0);
  EXPECT_FALSE(EnsurePrivateDir(link, &error));
  EXPECT_EQ(error, link + " (symlink to " + target + "): owned by uid 65534, not by this user");
}

}  // namespace
}  // namespace ncclscope::trace
