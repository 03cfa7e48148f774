// End to end, 8-rank jobs on the emulator: one watchdog per node correlates. The stalled rank that
// holds the node lock decides and leaves its line in the lock file; the others follow its decision
// file. So a hang is correlated by exactly one process, abort mode still reaches every stuck rank
// through the decision, and when the deciding rank is killed another one takes over (the kernel
// releases a dead holder's lock). Every assertion is something the design guarantees at any load:
// counts of holders and reports, who aborted, that the job ended by itself.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/watchdog/text_file.h"

namespace ncclscope::testing {
namespace {

using Clock = std::chrono::steady_clock;

struct Root {
  Root() {
    char tmpl[] = "/tmp/ncclscope-wd-node-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~Root() { std::filesystem::remove_all(path); }
  std::string path;
};

struct Job {
  std::string dir;
  std::string err_path;
  pid_t pid = -1;
  Clock::time_point t0;
  double timeout_s = 0;
  // After Wait:
  std::string err;
  double wall_s = 0;
  int exit_code = -1;
};

std::string Shipped(const std::string& scenario) {
  return NCCLSCOPE_TEST_SOURCE_DIR "/sim/scenarios/" + scenario + ".json";
}

// Starts `ncclscope sim --ranks 8` on the scenario file `path` in the background, with `env` set
// in the ranks.
Job Start(const std::string& path, const std::vector<std::string>& env, const std::string& root,
          double timeout_s, bool fail_fast) {
  Job job;
  job.dir = root + "/trace";
  job.err_path = root + "/stderr.txt";
  job.timeout_s = timeout_s;
  const std::string bin = NCCLSCOPE_TEST_BIN_DIR "/ncclscope";
  const std::string timeout = std::to_string(timeout_s);
  job.t0 = Clock::now();
  job.pid = fork();
  if (job.pid == 0) {
    freopen("/dev/null", "w", stdout);
    freopen(job.err_path.c_str(), "w", stderr);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<const char*> argv = {bin.c_str(),  "sim",          "--ranks", "8",
                                     "--scenario", path.c_str(),   "--dir",   job.dir.c_str(),
                                     "--timeout",  timeout.c_str()};
    if (fail_fast) argv.push_back("--fail-fast");
    argv.push_back(nullptr);
    execv(bin.c_str(), const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  return job;
}

void Wait(Job* job) {
  int status = 0;
  waitpid(job->pid, &status, 0);
  job->wall_s = std::chrono::duration<double>(Clock::now() - job->t0).count();
  job->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  job->err = ReadFile(job->err_path);
}

// The files of the node's one decider: <dir>/.watchdog-<job>.lock and .decision.
std::string FindWatchdogFile(const std::string& dir, const std::string& suffix) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return "";
  std::string found;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(".watchdog-", 0) == 0 && name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      found = dir + "/" + name;
    }
  }
  closedir(d);
  return found;
}

// The pids of the lock file's holder lines, one per acquisition, oldest first.
std::vector<int> Holders(const std::string& dir) {
  std::vector<int> pids;
  std::istringstream in(ReadFile(FindWatchdogFile(dir, ".lock")));
  for (std::string line; std::getline(in, line);) pids.push_back(std::atoi(line.c_str()));
  return pids;
}

// "holder <pid> <rank>" and "stage <s>" of the decision file; pid 0 when there is none.
struct DecisionView {
  int holder = 0;
  std::string stage;
  std::string text;
};
DecisionView ReadDecision(const std::string& dir) {
  DecisionView v;
  const std::string path = FindWatchdogFile(dir, ".decision");
  if (path.empty()) return v;
  v.text = ReadFile(path);
  std::istringstream in(v.text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("holder ", 0) == 0) v.holder = std::atoi(line.c_str() + 7);
    if (line.rfind("stage ", 0) == 0) v.stage = line.substr(6);
  }
  return v;
}

// Polls until pred holds or the job has ended; the job's own timeout bounds the wait.
template <typename Pred>
bool WaitUntil(const Job& job, Pred pred) {
  while (!pred()) {
    if (waitpid(job.pid, nullptr, WNOHANG) != 0) return pred();
    usleep(50'000);
  }
  return true;
}

// The global ranks named by "NCCLSCOPE_ON_HANG=abort: aborted communicator ... of rank R" lines.
std::set<int> AbortingRanks(const std::string& err) {
  std::set<int> ranks;
  const std::string key = "NCCLSCOPE_ON_HANG=abort: aborted communicator ";
  for (size_t at = err.find(key); at != std::string::npos; at = err.find(key, at + 1)) {
    const size_t of = err.find(" of rank ", at);
    if (of != std::string::npos) ranks.insert(std::atoi(err.c_str() + of + 9));
  }
  return ranks;
}

const char* const kConfirmSoon = "NCCLSCOPE_CONFIRM_FLOOR_MS=3000";

TEST(WatchdogNode, OneProcessCorrelatesAHang) {
  Root root;
  Job job = Start(Shipped("stuck-before"), {kConfirmSoon}, root.path, 12, false);
  Wait(&job);
  SCOPED_TRACE(job.err);
  // Seven ranks wait and stall; one took the lock, and it alone correlated and reported.
  const std::vector<int> holders = Holders(job.dir);
  ASSERT_EQ(holders.size(), 1u);
  const DecisionView d = ReadDecision(job.dir);
  EXPECT_EQ(d.holder, holders[0]) << d.text;
  EXPECT_EQ(d.stage, "hang") << d.text;
  EXPECT_EQ(Count(job.err, "verdict written to"), 1);
  EXPECT_EQ(Count(job.err, "(pid " + std::to_string(holders[0]) + "): "),
            Count(job.err, "ncclscope: watchdog of rank "));
  EXPECT_EQ(Count(job.err, "ncclscope: warning"), 0);
}

// crash-sigkill without its pipeline: every rank ends up waiting in a collective, so the decision
// names where each one waits (send/recv waits are not in the correlator's "waiting" view, whose
// communicators abort mode leaves, as before there was one decider).
constexpr const char* kCollectivesCrash = R"({
  "name": "collectives-crash",
  "description": "Rank 1 is SIGKILLed at the start of step 2; the others wait in collectives.",
  "seed": 11,
  "min_ranks": 4,
  "repeat": 3,
  "compute": {"ms": 1},
  "communicators": [
    {"name": "tp", "split": {"by": "block", "size": 2}},
    {"name": "dp", "split": {"by": "stride", "stride": 2}}
  ],
  "steps": [
    {"name": "forward", "ops": [{"op": "allreduce", "comm": "tp", "count": 256, "dtype": "float32"}]},
    {
      "name": "backward",
      "ops": [
        {"op": "allreduce", "comm": "dp", "count": 256, "dtype": "float32", "redop": "sum"},
        {"op": "broadcast", "count": 64, "dtype": "int32", "root": 0}
      ]
    }
  ],
  "faults": [{"kind": "crash", "ranks": [1], "step": 2, "mode": "sigkill"}]
})";

TEST(WatchdogNode, AbortReachesEveryStuckRank) {
  // Rank 1 is killed: a dead rank confirms the hang at once. Every survivor ends up waiting for
  // it; only the decider correlates, the others abort from its decision. Without fail-fast the
  // launcher waits for every rank, so the job ends before its timeout only if all seven aborted.
  Root root;
  const std::string scenario = root.path + "/collectives-crash.json";
  std::ofstream(scenario) << kCollectivesCrash;
  Job job = Start(scenario, {"NCCLSCOPE_ON_HANG=abort"}, root.path, 60, false);
  Wait(&job);
  SCOPED_TRACE(job.err);
  EXPECT_EQ(Count(job.err, "timeout after"), 0);
  EXPECT_LT(job.wall_s, job.timeout_s);
  EXPECT_EQ(AbortingRanks(job.err), (std::set<int>{0, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(Count(job.err, "verdict written to"), 1);
  EXPECT_GE(Holders(job.dir).size(), 1u);
}

TEST(WatchdogNode, AnotherRankTakesOverWhenTheDeciderIsKilled) {
  Root root;
  // A suspect for the whole run (60 s confirmation): the decider keeps looking and publishing.
  Job job = Start(Shipped("stuck-before"), {}, root.path, 40, false);
  int first = 0;
  ASSERT_TRUE(WaitUntil(job, [&] { return (first = ReadDecision(job.dir).holder) != 0; }));
  ASSERT_EQ(kill(first, SIGKILL), 0);
  int second = 0;
  const bool took_over = WaitUntil(job, [&] {
    second = ReadDecision(job.dir).holder;
    return second != 0 && second != first;
  });
  Wait(&job);
  SCOPED_TRACE(job.err);
  EXPECT_TRUE(took_over);
  // Two acquisitions: the killed decider's, then its successor's, which decides from then on.
  EXPECT_EQ(Holders(job.dir), (std::vector<int>{first, second}));
  EXPECT_EQ(ReadDecision(job.dir).holder, second);
  EXPECT_TRUE(std::filesystem::exists(job.dir + "/verdict.json"));
}

}  // namespace
}  // namespace ncclscope::testing
