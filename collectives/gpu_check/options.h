// The command line of ncclscope-gpu-check (--help prints it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/gpu_check/cases.h"

namespace ncclscope::gpu_check {

struct Options {
  std::vector<int> ranks;      // (a): simulated rank counts on one device
  std::vector<int> ipc_ranks;  // (b): process counts; empty: (b) is skipped
  CaseLimits limits;           // (a)'s cases
  CaseLimits ipc_limits;       // (b)'s cases
  int device = 0;
  uint64_t seed = 1;
  uint32_t wrap_after = 40;     // the epoch counter wraps after this many calls of a rank count
  uint64_t timeout_ms = 20000;  // a healthy kernel's bounded wait
  uint64_t stall_timeout_ms = 2000;  // the absent-rank check's bounded wait; 0: no such check
  // The exchange's absent-rank check: every wait there is one for the absent rank, so a short
  // bound cannot name another (exchange_run.h); 0: no such check.
  uint64_t exchange_stall_timeout_ms = 500;
  size_t copy_bytes = 256u << 20;  // the device-to-device copy that measures the HBM ceiling
  bool moe = true;                 // (a), (b) and (c) for the MoE dispatch/combine kernels
  std::vector<int> moe_ranks;      // the rank counts of `ranks` that run them; empty: all
  bool self_test_corrupt = false;  // flip one output byte before the first comparison (and the
                                   // first exchange and MoE dispatch comparisons)
};

// False with *error for an unknown or malformed argument; *help set for --help.
bool ParseOptions(int argc, char** argv, Options* o, bool* help, std::string* error);

extern const char kUsage[];

}  // namespace ncclscope::gpu_check
