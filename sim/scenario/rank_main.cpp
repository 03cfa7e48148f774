// ncclscope-sim-rank: one rank of an emulated NCCL job playing a scenario file. Started N times by
// the launcher (`ncclscope sim`), with RANK/WORLD_SIZE and the job's environment.
#include <cstdio>

#include "sim/scenario/rank_exit_codes.h"
#include "sim/scenario/rank_options.h"
#include "sim/scenario/rank_runner.h"

int main(int argc, char** argv) {
  std::string error;
  const auto opt = ncclscope::sim::parseRankOptions(argc, argv, error);
  if (!opt) {
    std::fprintf(stderr, "ncclscope-sim-rank: %s\n%s\n", error.c_str(),
                 ncclscope::sim::rankUsage().c_str());
    return ncclscope::sim::kRankUsage;
  }
  return ncclscope::sim::runRank(*opt);
}
