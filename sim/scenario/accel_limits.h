// The ranges the probe accepts for NCCLSCOPE_ACCEL_BUFFER and NCCLSCOPE_ACCEL_TIMEOUT_MS
// (plugin/core/config_table.h), repeated here because the scenario runner does not depend on the
// probe; tests/sim/scenario/accel_key_test.cpp fails when the two disagree.
#pragma once

#include <cstdint>

namespace ncclscope::sim {

inline constexpr uint64_t kAccelBufferMin = 65536;
inline constexpr uint64_t kAccelBufferMax = 1073741824;
inline constexpr int64_t kAccelTimeoutMsMin = 100;
inline constexpr int64_t kAccelTimeoutMsMax = 3600000;

}  // namespace ncclscope::sim
