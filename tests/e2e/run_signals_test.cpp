// `ncclscope run` stands between a job and whoever ends it (Kubernetes' SIGTERM to a container's
// PID 1, scancel, a lost session, kill -INT): the signal must reach the job, the exit code must be
// the job's, an exporter run started must stop with the job, and orphans must not stay zombies.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/e2e_env.h"
#include "tests/e2e/scratch_dir.h"
#include "tests/exporters/background_process.h"
#include "tests/exporters/http_get.h"
#include "tools/run_supervisor.h"

namespace ncclscope::testing {
namespace {

// `ncclscope run ARGS -- sh -c SCRIPT`, with SIGINT and SIGQUIT at their defaults whatever the
// test runner was started with (a shell's background job has them ignored, and an ignored signal
// is neither passed on nor trappable).
std::vector<std::string> RunArgv(const std::vector<std::string>& run_args,
                                 const std::string& script) {
  std::vector<std::string> argv = {"env", "--default-signal=INT,QUIT", Cli(), "run"};
  argv.insert(argv.end(), run_args.begin(), run_args.end());
  argv.insert(argv.end(), {"--", "sh", "-c", script});
  return argv;
}

// Waits (at most 30 s, on a loaded machine) for the job to say it is ready.
bool WaitForFile(const std::string& path) {
  for (int i = 0; i < 3000; ++i) {
    if (std::filesystem::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string Contents(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream all;
  all << in.rdbuf();
  return all.str();
}

// The decision behind "SIGINT only when the job did not get it from the terminal already".
TEST(RunSignals, AnInterruptIsPassedOnUnlessTheTerminalSentItToTheJobToo) {
  // Ctrl-C: the terminal signals its foreground process group, the job's as well as run's.
  EXPECT_FALSE(tools::PassOnInterrupt(SI_KERNEL, 100, 100));
  // The job left run's process group (a launcher with its own session): it did not get it.
  EXPECT_TRUE(tools::PassOnInterrupt(SI_KERNEL, 200, 100));
  // kill -INT on run's pid, sigqueue, tgkill: sent to run alone.
  EXPECT_TRUE(tools::PassOnInterrupt(SI_USER, 100, 100));
  EXPECT_TRUE(tools::PassOnInterrupt(SI_QUEUE, 100, 100));
  EXPECT_TRUE(tools::PassOnInterrupt(SI_TKILL, 100, 100));
}

// Whether `sig` waits to be taken by process `pid` (/proc/PID/status: SigPnd for its thread,
// ShdPnd for the process, masks in hex, bit sig - 1).
bool Pending(pid_t pid, int sig) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigPnd:", 0) != 0 && line.rfind("ShdPnd:", 0) != 0) continue;
    const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
    if ((mask >> (sig - 1)) & 1) return true;
  }
  return false;
}

// Waits (at most 30 s) until `pid` has taken its pending `sig`: a second one sent before that
// would merge into it.
bool WaitTaken(pid_t pid, int sig) {
  for (int i = 0; i < 3000; ++i) {
    if (!Pending(pid, sig)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// What a terminal shows: everything the job wrote to it, read as it comes.
class Terminal {
 public:
  explicit Terminal(int master) : master_(master) {}
  ~Terminal() { close(master_); }
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;
  // Reads until `text` was shown (true) or the job closed the terminal or 30 s passed (false).
  bool WaitFor(const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (shown_.find(text) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      pollfd p{master_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[256];
      const ssize_t n = read(master_, buf, sizeof buf);
      if (n <= 0) return false;  // EIO: nothing holds the terminal open any more
      shown_.append(buf, static_cast<size_t>(n));
    }
    return true;
  }
  void Type(const std::string& keys) {
    ASSERT_EQ(write(master_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }
  const std::string& shown() const { return shown_; }

 private:
  int master_;
  std::string shown_;
};

// Ctrl-C on a terminal signals its whole foreground process group: the job in it got the SIGINT,
// so run must not send it a second one; a SIGINT sent to run alone is the job's to get.
TEST(RunSignals, CtrlCReachesTheJobOnceAndAnInterruptOfRunAloneIsPassedOn) {
  ScratchDir scratch;
  // Counts its SIGINTs; on SIGTERM says how many and exits 3. It takes each signal as soon as it
  // arrives (sigwaitinfo), so a second SIGINT right after the terminal's is seen unless it came
  // while the first was still pending (the kernel merges the two): a Ctrl-C passed on as well is
  // caught often, not always; AnInterruptIsPassedOn... checks the decision itself.
  const std::string job =
      "import signal, sys\n"
      "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})\n"
      "print('ready', flush=True)\n"
      "n = 0\n"
      "while True:\n"
      "    info = signal.sigwaitinfo({signal.SIGINT, signal.SIGTERM})\n"
      "    if info.si_signo == signal.SIGTERM:\n"
      "        print('ints', n, 'end', flush=True)\n"
      "        sys.exit(3)\n"
      "    n += 1\n"
      "    print('int', n, flush=True)\n";
  const std::string cli = Cli();
  const std::string trace = scratch / "trace";
  int master = -1;
  // The child leads a new session on the terminal, in its foreground process group.
  const pid_t run = forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(run, 0);
  if (run == 0) {
    signal(SIGINT, SIG_DFL);  // whatever the test runner was started with
    execl(cli.c_str(), cli.c_str(), "run", "--dir", trace.c_str(), "--", "python3", "-c",
          job.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  Terminal terminal(master);
  ASSERT_TRUE(terminal.WaitFor("ready")) << terminal.shown();
  terminal.Type("\x03");
  EXPECT_TRUE(terminal.WaitFor("int 1")) << terminal.shown();
  // run got the terminal's SIGINT too; ours must not merge into it while it is still pending.
  EXPECT_TRUE(WaitTaken(run, SIGINT));
  kill(run, SIGINT);
  EXPECT_TRUE(terminal.WaitFor("int 2")) << terminal.shown();
  kill(run, SIGTERM);
  EXPECT_TRUE(terminal.WaitFor(" end")) << terminal.shown();
  // One from the terminal, one from run: a Ctrl-C passed on as well makes it 3.
  EXPECT_NE(terminal.shown().find("ints 2 end"), std::string::npos) << terminal.shown();
  int status = 0;
  ASSERT_EQ(waitpid(run, &status, 0), run);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << status << terminal.shown();
}

struct SignalCase {
  int sig;
  const char* name;  // as sh's trap names it
};

void PrintTo(const SignalCase& c, std::ostream* os) {
  *os << "SIG" << c.name;
}

class RunPassesOn : public ::testing::TestWithParam<SignalCase> {};

// The job traps the signal, says so and exits with its own code: run must exit with that code.
// (Unanswered, the job gives up after about a minute, so a failure leaves nothing running.)
TEST_P(RunPassesOn, TheSignalToTheJobWhichDecidesTheExitCode) {
  const SignalCase c = GetParam();
  ScratchDir scratch;
  const std::string ready = scratch / "ready";
  const std::string got = scratch / "got";
  const std::string script = "trap 'echo " + std::string(c.name) + " > \"" + got + "\"; exit 7' " +
                             c.name + "; touch \"" + ready +
                             "\"; i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done";
  BackgroundProcess run(RunArgv({"--dir", scratch / "trace"}, script), scratch / "run.log");
  ASSERT_TRUE(WaitForFile(ready)) << run.Output();
  ASSERT_TRUE(run.Signal(c.sig));
  EXPECT_EQ(run.Wait(30), 7) << run.Output();
  EXPECT_EQ(Contents(got), std::string(c.name) + "\n") << "the job saw the signal\n"
                                                       << run.Output();
}

INSTANTIATE_TEST_SUITE_P(Signals, RunPassesOn,
                         ::testing::Values(SignalCase{SIGTERM, "TERM"}, SignalCase{SIGHUP, "HUP"},
                                           SignalCase{SIGINT, "INT"}, SignalCase{SIGQUIT, "QUIT"},
                                           SignalCase{SIGUSR1, "USR1"}),
                         [](const auto& info) { return std::string(info.param.name); });

// A job that does not handle SIGTERM dies of it: 128 + 15, as a shell reports it. The exporter run
// started goes with the job.
TEST(RunSignals, AJobEndedBySigtermExits143AndItsExporterStops) {
  ScratchDir scratch;
  const std::string ready = scratch / "ready";
  BackgroundProcess run(RunArgv({"--dir", scratch / "trace", "--exporter=127.0.0.1:0"},
                                "touch \"" + ready + "\"; exec sleep 60"),
                        scratch / "run.log");
  const int port = run.WaitForPort(30);
  ASSERT_GT(port, 0) << run.Output();
  ASSERT_TRUE(WaitForFile(ready)) << run.Output();
  EXPECT_EQ(HttpGet(port, "/healthz").status, 200);
  ASSERT_TRUE(run.Signal(SIGTERM));
  EXPECT_EQ(run.Wait(30), 128 + SIGTERM) << run.Output();
  EXPECT_EQ(HttpGet(port, "/healthz").status, 0) << "the exporter ended with the job";
}

// A process the job started and left behind (a daemonized helper) is handed to run when its
// parent exits; when it ends, run must collect it, or it stays a zombie until run ends (forever,
// as PID 1). The job watches for that and exits 5 once it is gone.
TEST(RunSignals, ASubreaperReapsTheJobsOrphansAndKeepsTheJobsExitCode) {
  ScratchDir scratch;
  const std::string pid_file = scratch / "orphan.pid";
  const std::string script =
      // The subshell exits at once, so its background child is orphaned; it writes its pid, ends.
      "( sh -c 'echo $$ > \"$0\".tmp; mv \"$0\".tmp \"$0\"' \"" + pid_file +
      "\" & ); "
      "while [ ! -s \"" +
      pid_file +
      "\" ]; do sleep 0.05; done; "
      "pid=$(cat \"" +
      pid_file +
      "\"); "
      "i=0; while [ -e /proc/$pid ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; "
      "if [ -e /proc/$pid ]; then echo \"orphan $pid left: $(cat /proc/$pid/stat)\"; exit 1; fi; "
      "exit 5";
  BackgroundProcess run(RunArgv({"--dir", scratch / "trace", "--subreaper"}, script),
                        scratch / "run.log");
  EXPECT_EQ(run.Wait(60), 5) << run.Output();
}

}  // namespace
}  // namespace ncclscope::testing
