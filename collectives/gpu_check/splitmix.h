// The check's random numbers: splitmix64, one stream per (seed, case, rep, rank), so every process
// rebuilds any rank's input from those numbers alone.
#pragma once

#include <cstdint>

namespace ncclscope::gpu_check {

struct SplitMix64 {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(Next() % n); }
};

}  // namespace ncclscope::gpu_check
