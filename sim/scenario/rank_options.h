// Command line and environment of ncclscope-sim-rank.
#pragma once

#include <optional>
#include <string>

namespace ncclscope::sim {

struct RankOptions {
  std::string scenario;  // path of the scenario file
  int rank = -1;         // --rank or RANK
  int nranks = -1;       // --nranks or WORLD_SIZE
  int local_rank = 0;    // LOCAL_RANK, picks the emulated device
  std::string run_dir;   // --run-dir, NCCLSCOPE_SIM_RUN_DIR or NCCLSCOPE_DIR: unique id file
  std::string job_tag;   // NCCLSIM_JOB_TAG, names the unique id file
  double bootstrap_timeout_s = 60.0;  // --bootstrap-timeout
  bool plan = false;  // --plan: print the NCCL calls this rank would make instead of running
};

// Reads argv, then the environment for what argv left out. On a problem returns nullopt and sets
// `error` to a one-line message. Not thread-safe (reads the environment).
std::optional<RankOptions> parseRankOptions(int argc, char** argv, std::string& error);

std::string rankUsage();

}  // namespace ncclscope::sim
