// The N rank processes of a simulated job: started with posix_spawn, output relayed line by line
// with a "[rank R] " prefix, reaped, and killed on timeout.
#pragma once

#include <sys/types.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "sim/scenario/line_prefixer.h"

namespace ncclscope::sim {

struct RankOutcome {
  pid_t pid = -1;
  bool running = false;
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  bool timed_out = false;
};

// Owns the children: the destructor SIGKILLs and reaps any still running. Not thread-safe.
class RankProcesses {
 public:
  RankProcesses(std::ostream& out, std::ostream& err) : out_(out), err_(err) {}
  ~RankProcesses();
  RankProcesses(const RankProcesses&) = delete;
  RankProcesses& operator=(const RankProcesses&) = delete;

  // Starts rank i as argv[i] with environment env[i]. On failure returns false, sets `error`, and
  // leaves already started ranks to the destructor.
  bool start(const std::vector<std::vector<std::string>>& argv,
             const std::vector<std::vector<std::string>>& env, std::string& error);

  // Relays output until every rank has exited, or until timeout_s (> 0) passes: then SIGKILLs
  // the rest (stopped ones too), marks them timed out and returns their ranks.
  // fail_fast: once a rank has failed (non-zero exit, signal), SIGKILL the others, as an elastic
  // launcher (torchrun) tears a job down to restart it.
  std::vector<int> wait(double timeout_s, bool fail_fast = false);

  const std::vector<RankOutcome>& outcomes() const { return ranks_; }

 private:
  struct Pipe {
    int fd = -1;
    std::unique_ptr<LinePrefixer> lines;
  };

  void pump(int timeout_ms);  // one poll round over every open pipe
  void reap(bool block);
  void drain();
  bool anyFailed() const;
  bool anyRunning() const;

  std::ostream& out_;
  std::ostream& err_;
  std::vector<RankOutcome> ranks_;
  std::vector<Pipe> pipes_;  // two per rank: stdout, stderr
};

// "SIGKILL" etc.
std::string signalName(int sig);

}  // namespace ncclscope::sim
