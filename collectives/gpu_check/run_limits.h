// Units and limits shared by the GPU check's runs: the options' milliseconds as the kernels'
// nanoseconds, how long a CPU twin may take, and one host thread per emulated rank.
#pragma once

#include <cstdint>
#include <thread>
#include <vector>

namespace ncclscope::gpu_check {

inline constexpr uint64_t kMsToNs = 1000000;

// Long enough for the largest case on a slow machine; a twin never waits for an absent rank.
inline constexpr uint64_t kTwinTimeoutNs = 300ull * 1000 * 1000 * 1000;

// Runs fn(r) for every rank on its own thread, and returns when all returned: the twins' calls
// wait for each other, and a driver context is current on one thread only.
template <typename Fn>
void OnEveryRank(int n, Fn fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(fn, r);
  for (std::thread& t : threads) t.join();
}

}  // namespace ncclscope::gpu_check
