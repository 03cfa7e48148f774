// What the host passes to the numerics kernels (kernels/numerics.cu; by value, as the launch's one
// parameter), their entry points, and the launch shape for a buffer. Shared by the CUDA source,
// the CPU twin (numerics_twin.h) and the probe's launch glue (plugin/numerics/numerics_probe.cpp).
#pragma once

#include <cstdint>

#include "collectives/numerics/numerics_hash.h"
#include "collectives/numerics/numerics_scan.h"

namespace ncclscope::collectives {

// The scan of `count` elements at `data` (device memory, element-aligned or not). `result`
// (device-visible memory, e.g. pinned) must hold EmptyScan() before the launch.
struct NumericScanArgs {
  const unsigned char* data;
  uint64_t count;
  NumericScanResult* result;
};

// The content hash of `length` bytes at `data` (any alignment). `result` (device-visible) must
// hold {0} before the launch; after it, result->sum is H (numerics_hash.h).
struct ContentHashArgs {
  const unsigned char* data;
  uint64_t length;
  ContentHashResult* result;
};

// The scan kernels' entry points, one per scanned format (NumericScanKernelName), and the hash's.
inline constexpr const char* kNumericScanKernelNames[6] = {
    "ncclscope_numerics_scan_fp16",    "ncclscope_numerics_scan_fp32",
    "ncclscope_numerics_scan_fp64",    "ncclscope_numerics_scan_bf16",
    "ncclscope_numerics_scan_fp8e4m3", "ncclscope_numerics_scan_fp8e5m2"};
inline constexpr const char* kContentHashKernelName = "ncclscope_numerics_hash";

// The scan kernel for format f; nullptr for kInteger (nothing to scan).
inline const char* NumericScanKernelName(NumericFormat f) {
  const auto i = static_cast<uint32_t>(f);
  return i >= 1 && i <= 6 ? kNumericScanKernelNames[i - 1] : nullptr;
}

// Threads per block of both kernels: a multiple of the warp (the block reduction shuffles whole
// warps), at most 1024.
inline constexpr uint32_t kNumericsThreads = 512;
// Resident blocks per multiprocessor at kNumericsThreads (2048 threads per SM on sm_80, sm_90 and
// sm_100).
inline constexpr uint32_t kNumericsBlocksPerSm = 4;

struct NumericsLaunch {
  uint32_t blocks;
  uint32_t threads;
};

// The grid for a pass over `length` bytes on a GPU with `multiprocessors` SMs (0 counts as 1):
// one 16-byte pack per thread up to a full GPU of resident blocks, the grid-stride loop covering
// the rest; at least one block (the hash kernel adds the length term even for 0 bytes). Not
// tuned: no GPU has measured it yet. Pure, thread-safe.
NumericsLaunch NumericsLaunchShape(uint64_t length, uint32_t multiprocessors) noexcept;

}  // namespace ncclscope::collectives
