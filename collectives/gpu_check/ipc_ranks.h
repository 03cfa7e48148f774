// Part (b) of the GPU check: N processes share the device, each one rank with its own buffers,
// registered for the others through cuIpcGetMemHandle / cuIpcOpenMemHandle (handles exchanged over
// pipes; each process forked before it initializes CUDA), running the same kernels and cases as
// (a) with every rank checking its own output bit for bit against the CPU twins.
#pragma once

#include <string>
#include <vector>

#include "collectives/gpu_check/options.h"

namespace ncclscope::gpu_check {

// Runs every process count of o.ipc_ranks; must be called before this process initializes CUDA.
// Appends one line per count to *lines. Returns 0 (all right), 1 (wrong or failed) or 3 (a hang).
int RunIpcRanks(const Options& o, std::vector<std::string>* lines);

}  // namespace ncclscope::gpu_check
