// What the stall-stage tests (interposed and plugin-only) read from `ncclscope analyze --json`: the
// verdict about one collective, and the channels each of its transfers is split over.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace ncclscope::testing {

// Channels the emulator splits an operation over: NCCLSIM_NCHANNELS' default.
constexpr int kChannels = 2;

// The verdict about `op` #seq of `comm` in analyze's JSON `j`, or null. The pointer is into `j`.
inline const nlohmann::json* VerdictOf(const nlohmann::json& j, const std::string& comm,
                                       const std::string& op, uint64_t seq) {
  for (const auto& v : j["verdicts"]) {
    if (v["comm_name"] == comm && v["op"] == op && v["seq"] == seq) return &v;
  }
  return nullptr;
}

}  // namespace ncclscope::testing
