// The all-to-all twin entered the way the GPU kernel is: with its launch shape and its one
// by-value parameter (planner/alltoall_kernel_args.h). What the emulated driver would run for a
// launch of ncclscope_alltoall_pull (docs/emulator.md, host twins).
#pragma once

#include <cstdint>

#include "collectives/planner/alltoall_kernel_args.h"

namespace ncclscope::collectives {

// Runs this rank's part of the kernel as a launch of blocks x threads with `args`: waits end
// timeout_ns after the start; the first expired one is written to *args.stall (when not null) and
// the kernel returns, as on the GPU.
void RunAlltoAllTwinKernel(const AlltoAllKernelArgs& args, uint32_t blocks,
                           uint32_t threads) noexcept;

}  // namespace ncclscope::collectives
