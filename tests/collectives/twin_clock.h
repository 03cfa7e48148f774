// Time for the twin kernels' deadlines and timeouts: nanoseconds, as MonotonicNs()
// (collectives/twins/bounded_wait.h) counts them.
#pragma once

#include <cstdint>

namespace ncclscope::collectives {

constexpr int64_t kSecondNs = 1'000'000'000;

}  // namespace ncclscope::collectives
