// `ncclscope sim` jobs started in the background by the watchdog's end-to-end tests, and what they
// leave behind in their trace directories (the node lock's holder lines, the job's incident record,
// the watchdog's aborts).
#pragma once

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ncclscope::testing {

// A directory under /tmp, removed with everything in it.
struct Root {
  Root();
  ~Root();
  Root(const Root&) = delete;
  Root& operator=(const Root&) = delete;
  std::string path;
};

struct SimSpec {
  std::string scenario_path;
  int ranks = 8;
  int nodes = 1;  // > 1: `--nodes`, each simulated node with a directory of its own under dir
  double timeout_s = 12;
  bool fail_fast = false;
  std::vector<std::string> env;  // NAME=VALUE, set in the ranks
  std::string dir;               // the trace directory; empty: <root>/trace
};

struct SimJob {
  std::string dir;
  std::string err_path;
  pid_t pid = -1;
  std::chrono::steady_clock::time_point t0;
  int64_t start_realtime_ns = 0;
  double timeout_s = 0;
  // After Wait:
  std::string err;
  double wall_s = 0;
  int exit_code = -1;
};

// The shipped scenario file `name`.json.
std::string Shipped(const std::string& name);

// Starts the job; stdout goes to /dev/null, stderr to <root>/stderr-<n>.txt.
SimJob StartSim(const SimSpec& spec, const std::string& root);
void WaitSim(SimJob* job);

// Polls until pred holds or the job has ended; the job's own timeout bounds the wait.
bool Ended(const SimJob& job);  // the job has exited (not reaped: WaitSim still collects it)
template <typename Pred>
bool WaitUntil(const SimJob& job, Pred pred) {
  while (!pred()) {
    if (Ended(job)) return pred();
    usleep(50'000);
  }
  return true;
}

// The pids of the node lock file's holder lines, one per acquisition, oldest first.
std::vector<int> Holders(const std::string& dir);

// The job's incident record in dir (.incident-<job key>): its text and a few fields.
struct RecordView {
  int holder = 0;  // pid; 0 when there is no record
  std::string stage;
  std::string mode;
  std::string text;
};
RecordView ReadIncident(const std::string& dir);

// The global ranks named by "NCCLSCOPE_ON_HANG=abort: aborted communicator ... of rank R" lines.
std::set<int> AbortingRanks(const std::string& err);

// Per global rank, the wall time (s) of its first abort by its watchdog, read from the ring files
// of `dirs` (`ncclscope dump --json`: comm_abort records flagged by_watchdog).
std::map<int, double> WatchdogAbortTimes(const std::vector<std::string>& dirs);

// The pid of the process writing global rank `rank`'s ring file in `dirs`; 0 when none.
int PidOfRank(const std::vector<std::string>& dirs, int rank);

// Runs `ncclscope analyze ARGS...` and returns its exit code; *out gets its stdout.
int RunAnalyze(const std::vector<std::string>& args, std::string* out);

}  // namespace ncclscope::testing
