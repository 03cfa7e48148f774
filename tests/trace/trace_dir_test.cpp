#include "trace/trace_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/trace/temp_dir.h"

namespace ncclscope::trace {
namespace {

TEST(TraceDir, CreatesPrivateDirectory) {
  testing::TempDir tmp;
  std::string error;
  ASSERT_TRUE(EnsurePrivateDir(tmp.path() + "/a/b", &error)) << error;
  struct stat st;
  ASSERT_EQ(stat((tmp.path() + "/a/b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(TraceDir, RefusesDirectoryOpenToOthers) {
  testing::TempDir tmp;
  std::string dir = tmp.path() + "/open";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  std::string error;
  EXPECT_FALSE(EnsurePrivateDir(dir, &error));
  EXPECT_NE(error.find("mode 755"), std::string::npos) << error;
}

TEST(TraceDir, RefusesAFileAndAnUncreatablePath) {
  std::string error;
  EXPECT_FALSE(EnsurePrivateDir("/proc/version", &error));
  EXPECT_FALSE(error.empty());
  error.clear();
  EXPECT_FALSE(EnsurePrivateDir("/proc/ncclscope-nope/x", &error));
  EXPECT_NE(error.find("/proc/ncclscope-nope"), std::string::npos) << error;
}

}  // namespace
}  // namespace ncclscope::trace
