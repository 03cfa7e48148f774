// ncclscope-sim-rank: one rank of an emulated NCCL job playing a scenario file. Started N times by
// the launcher (`ncclscope sim`), with RANK/WORLD_SIZE and the job's environment.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sim/scenario/rank_exit_codes.h"
#include "sim/scenario/rank_options.h"
#include "sim/scenario/rank_runner.h"

int main(int argc, char** argv) {
  // NCCLSCOPE_CUPTI=1: the emulated libcupti.so.13 (next to the emulated libcuda.so.1, on this
  // program's run path) is loaded up front, as a framework linked with CUPTI (PyTorch's Kineto)
  // has it; the probe's dlopen of that soname then finds it instead of the real one.
  if (const char* cupti = std::getenv("NCCLSCOPE_CUPTI");
      cupti != nullptr && std::strcmp(cupti, "1") == 0) {
    dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
  }
  std::string error;
  const auto opt = ncclscope::sim::parseRankOptions(argc, argv, error);
  if (!opt) {
    std::fprintf(stderr, "ncclscope-sim-rank: %s\n%s\n", error.c_str(),
                 ncclscope::sim::rankUsage().c_str());
    return ncclscope::sim::kRankUsage;
  }
  return ncclscope::sim::runRank(*opt);
}
