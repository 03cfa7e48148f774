// Parts (a) and (c) of the GPU check in this process: simulated ranks on one device for every rank
// count and case, every output compared bit for bit with the CPU twins, the absent-rank check of
// the bounded wait, timings and the device's copy bandwidth; prints the summary table.
#pragma once

#include <cstdio>

#include "collectives/gpu_check/options.h"

namespace ncclscope::gpu_check {

// 0: every result right; 1: a wrong result, an unexpected stall or an error; 3: a hang (the
// process must then leave without touching the device again: _exit). Progress goes to stdout, the
// summary table to `summary`.
int RunSingleDevice(const Options& o, FILE* summary);

}  // namespace ncclscope::gpu_check
