// The CPU twin entered the way the GPU kernels are: with their launch shape and their one
// by-value parameter (planner/allreduce_kernel_args.h). This is what runs when the emulated driver
// launches one of ncclscope's kernels (docs/emulator.md, host twins).
#pragma once

#include <cstdint>

#include "collectives/planner/allreduce_kernel_args.h"
#include "collectives/types/accel_types.h"

namespace ncclscope::collectives {

// Runs this rank's part of the kernel `algorithm` over `dtype` as a launch of blocks x threads
// with `args`: waits end timeout_ns after the start; the first expired one is written to
// *args.stall (when not null) and the kernel returns, as on the GPU.
void RunAllReduceTwinKernel(Algorithm algorithm, Dtype dtype, const AllReduceKernelArgs& args,
                            uint32_t blocks, uint32_t threads) noexcept;

}  // namespace ncclscope::collectives
