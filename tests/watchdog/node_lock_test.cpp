// One deciding watchdog per node: the lock is exclusive, given back on release and by the death
// of its holder (the kernel's doing, so a crashed decider is always replaced), never kept alive by
// a forked child, and each acquisition leaves its holder's line in the lock file.
#include "plugin/watchdog/node_lock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace ncclscope::plugin {
namespace {

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/ncclscope-node-lock-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

int Lines(const std::string& path) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

TEST(NodeLock, OneHolderAtATime) {
  TempDir dir;
  const std::string path = dir.path + "/.watchdog-x.lock";
  NodeLock a, b;
  std::string error;
  EXPECT_EQ(a.TryAcquire(path, 0, &error), NodeLock::Result::kHeld);
  EXPECT_EQ(a.TryAcquire(path, 0, &error), NodeLock::Result::kHeld);  // still ours
  EXPECT_EQ(b.TryAcquire(path, 1, &error), NodeLock::Result::kOther);
  a.Release();
  EXPECT_EQ(b.TryAcquire(path, 1, &error), NodeLock::Result::kHeld);
  EXPECT_EQ(Lines(path), 2);  // one line per acquisition, not per attempt
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(NodeLock, TheHoldersDeathReleasesIt) {
  TempDir dir;
  const std::string path = dir.path + "/.watchdog-x.lock";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    NodeLock held;
    std::string error;
    const char ok = held.TryAcquire(path, 5, &error) == NodeLock::Result::kHeld ? 'y' : 'n';
    if (write(ready[1], &ok, 1) != 1) _exit(2);
    pause();  // killed below, holding the lock
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  NodeLock next;
  std::string error;
  EXPECT_EQ(next.TryAcquire(path, 1, &error), NodeLock::Result::kOther);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(next.TryAcquire(path, 1, &error), NodeLock::Result::kHeld);
  close(ready[0]);
  close(ready[1]);
}

TEST(NodeLock, AForkedChildDoesNotKeepIt) {
  TempDir dir;
  const std::string path = dir.path + "/.watchdog-x.lock";
  NodeLock held;
  std::string error;
  ASSERT_EQ(held.TryAcquire(path, 0, &error), NodeLock::Result::kHeld);
  int gate[2], ready[2];
  ASSERT_EQ(pipe(gate), 0);
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(gate[1]);
    // The fork handlers ran before fork() returned here: the child's copy is closed by now, and
    // its number may be the application's next descriptor, which the child's lock never closes.
    const int app_fd = open("/dev/null", O_RDONLY);
    held.Release();
    const bool app_fd_open = fcntl(app_fd, F_GETFD) != -1;
    NodeLock again;
    std::string child_error;
    const bool other = again.TryAcquire(path, 2, &child_error) == NodeLock::Result::kOther;
    if (write(ready[1], app_fd_open && other ? "y" : "n", 1) != 1) _exit(2);
    char c = 0;
    if (read(gate[0], &c, 1) < 0) _exit(2);  // lives on while the parent gives the lock back
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  EXPECT_EQ(c, 'y') << "the child closed a descriptor not its own, or took the parent's lock";
  close(ready[0]);
  close(ready[1]);
  held.Release();
  NodeLock next;
  EXPECT_EQ(next.TryAcquire(path, 1, &error), NodeLock::Result::kHeld);
  close(gate[1]);
  waitpid(child, nullptr, 0);
  close(gate[0]);
}

TEST(NodeLock, AnUnusablePathSaysWhy) {
  NodeLock lock;
  std::string error;
  EXPECT_EQ(lock.TryAcquire("/nonexistent-dir/.watchdog-x.lock", 0, &error),
            NodeLock::Result::kNoLock);
  EXPECT_NE(error.find("/nonexistent-dir/.watchdog-x.lock"), std::string::npos) << error;
}

}  // namespace
}  // namespace ncclscope::plugin
