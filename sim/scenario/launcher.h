// The launcher behind `ncclscope sim`: validates a scenario, starts N ncclscope-sim-rank processes
// over the emulator (with the probe preloaded unless disabled), relays their output, enforces the
// timeout, and says which ranks failed and why.
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace ncclscope::sim {

struct SimOptions {
  int ranks = 0;
  std::string scenario;   // path of the scenario file
  std::string trace_dir;  // NCCLSCOPE_DIR of the job; empty: a new directory under $TMPDIR
  // > 0: the ranks split into this many simulated nodes of equal contiguous blocks, each with its
  // own host name (node0, node1, ...) and directory <trace_dir>/<job>/<host>.
  int nodes = 0;
  bool probe = true;         // LD_PRELOAD libncclscope.so into every rank
  double timeout_s = 0;      // > 0: kill the job when it runs longer and report a hang
  bool fail_fast = false;    // kill the other ranks once one fails, as torchrun does
  std::string probe_path;    // empty: <dir of this executable>/../lib/libncclscope.so
  std::string rank_program;  // empty: <dir of this executable>/ncclscope-sim-rank
  std::vector<std::pair<std::string, std::string>> extra_env;  // set last, overriding ours
};

// Exit codes of runSim.
enum SimExit : int { kSimOk = 0, kSimJobFailed = 1, kSimSetupError = 2 };

// Runs the job to the end and returns a SimExit. The start line (with nodes, one more per node:
// "ncclscope sim: node node1: ranks 4-7, trace dir DIR") and success go to `out`; setup errors,
// the timeout and one line per failed rank go to `err`. Ranks' stdout lines go to `out` and their
// stderr lines to `err`, each prefixed "[rank R] ". Not thread-safe (spawns and reaps children);
// call from one thread.
int runSim(const SimOptions& opt, std::ostream& out, std::ostream& err);

}  // namespace ncclscope::sim
