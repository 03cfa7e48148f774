// What the check found, and the one summary table it prints (timings: host time per launch, kernel
// time per size against the bytes it moves, next to the device's own copy bandwidth).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "collectives/gpu_check/cases.h"

namespace ncclscope::gpu_check {

struct CaseResult {
  Case c;  // as run (blocks lowered for co-residency, if it was)
  int runs = 0;
  int wrong = 0;                  // runs whose output differed, or that stalled
  std::vector<double> launch_us;  // every rank's launch
  std::vector<double> kernel_us;  // the last-launched rank's kernel, per run
};

struct Summary {
  std::string device;     // "NVIDIA H200 (sm_90, 132 SMs, driver 13000)"
  double copy_gbps = -1;  // device-to-device copy, reads + writes per second; < 0: not measured
  std::string copy_how;   // "256 MiB, cuEvent, median of 5"
  std::vector<std::string> notes;  // co-residency, epochs, the absent-rank check
  std::vector<CaseResult> cases;
};

double Median(std::vector<double> v);

// The summary block: device, copy ceiling, notes, then one row per case.
void PrintSummary(const Summary& s, FILE* out);

}  // namespace ncclscope::gpu_check
