// The CPU twin of the numerics kernels (kernels/numerics.cu): the same threads' shares
// (ScanThreadShare, HashThreadShare) over host memory, merged block by block as the kernels'
// block reductions and atomics do. The tests run it under any grid to show the result does not
// depend on the split; the emulator runs it for the kernels' launches (RunNumeric*TwinKernel).
#pragma once

#include <cstdint>

#include "collectives/numerics/numerics_kernel_args.h"

namespace ncclscope::collectives {

// The scan of `count` elements of format f at `data` as a launch of blocks x threads computes it;
// EmptyScan() for kInteger (nothing to scan) and for a grid with no thread. Reads only; pure,
// thread-safe.
NumericScanResult ScanTwin(NumericFormat f, const void* data, uint64_t count, uint32_t blocks = 1,
                           uint32_t threads = 1) noexcept;

// H (numerics_hash.h) of `length` bytes at `data` as a launch of blocks x threads computes it (a
// grid with no thread counts as one thread). Reads only; pure, thread-safe.
uint64_t ContentHashTwin(const void* data, uint64_t length, uint32_t blocks = 1,
                         uint32_t threads = 1) noexcept;

// The kernels as launched: each block's partial added into *args.result with atomic operations,
// as the kernel's thread 0 of each block does (so launches may share a result, as on the GPU).
// Nothing for kInteger or an empty grid. Thread-safe for concurrent launches on one result.
void RunNumericScanTwinKernel(NumericFormat f, const NumericScanArgs& args, uint32_t blocks,
                              uint32_t threads) noexcept;
void RunContentHashTwinKernel(const ContentHashArgs& args, uint32_t blocks,
                              uint32_t threads) noexcept;

}  // namespace ncclscope::collectives
