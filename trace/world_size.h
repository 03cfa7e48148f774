// How many ranks a job can plausibly have. Launcher variables (WORLD_SIZE, SLURM_NTASKS) and ring
// headers are read as written, and a wrong one (a typo, a corrupt file) must not make anyone
// allocate per-rank state or print per-rank lists for billions of ranks. The largest NCCL jobs run
// about 10^5 ranks; the cap leaves an order of magnitude above that.
#pragma once

#include <cstdint>

namespace ncclscope::trace {

inline constexpr int kMaxWorldSize = 1 << 20;

// A world size (or communicator size) worth believing. Thread-safe.
inline constexpr bool PlausibleWorldSize(int64_t n) {
  return n > 0 && n <= kMaxWorldSize;
}

}  // namespace ncclscope::trace
