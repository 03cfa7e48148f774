// The size syntax of ncclscope's settings (NCCLSCOPE_ACCEL_BUFFER=16m, a scenario's "buffer":
// "1m"): decimal digits, then optionally k, m or g (any case) for 2^10, 2^20, 2^30. Shared by the
// probe's configuration (plugin/core/config.cpp) and the scenario parser: both accept one text.
#pragma once

#include <cstdint>
#include <string_view>

namespace ncclscope::trace {

// The bytes `text` says; false for anything else (a sign, spaces, another suffix, trailing text)
// or a value past 2^64. Pure.
bool ParseSizeText(std::string_view text, uint64_t* out) noexcept;

}  // namespace ncclscope::trace
