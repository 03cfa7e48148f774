// The Linux process probe against real processes: running, stopped, and dead but not reaped.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "hang_detector/ingest/process_probe.h"

namespace ncclscope::hang_detector {
namespace {

ProcessState WaitFor(const ProcessProbe& probe, int pid, ProcessState want) {
  ProcessState s = probe.State(pid);
  for (int i = 0; i < 200 && s != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    s = probe.State(pid);
  }
  return s;
}

TEST(ProcessProbe, TellsRunningStoppedAndGone) {
  const auto probe = MakeLinuxProcessProbe();
  EXPECT_FALSE(probe->ThisHost().empty());
  EXPECT_EQ(probe->State(getpid()), ProcessState::kRunning);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  EXPECT_EQ(WaitFor(*probe, child, ProcessState::kRunning), ProcessState::kRunning);
  kill(child, SIGSTOP);
  EXPECT_EQ(WaitFor(*probe, child, ProcessState::kStopped), ProcessState::kStopped);
  kill(child, SIGKILL);
  // Dead but not reaped yet: a zombie is gone for our purposes.
  EXPECT_EQ(WaitFor(*probe, child, ProcessState::kGone), ProcessState::kGone);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(probe->State(child), ProcessState::kGone);
}

// A simulated node (or a pod named apart from its node) names its ring files NCCLSCOPE_HOST: the
// probe must call those files this host's, or no pid of theirs would ever be checked.
TEST(ProcessProbe, ThisHostIsWhatTheRingWritersCallIt) {
  setenv("NCCLSCOPE_HOST", "node5", 1);
  const auto probe = MakeLinuxProcessProbe();
  unsetenv("NCCLSCOPE_HOST");
  EXPECT_EQ(probe->ThisHost(), "node5");
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  EXPECT_EQ(MakeLinuxProcessProbe()->ThisHost(), host);
}

}  // namespace
}  // namespace ncclscope::hang_detector
