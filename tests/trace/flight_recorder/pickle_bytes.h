// Building pickle bytes by hand in tests: Bytes({0x80, 2, 'N', '.'}).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>

#include "trace/flight_recorder/pickle_reader.h"

namespace ncclscope::flight_recorder::testing {

inline std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

// ParsePickle with the default limits.
inline std::optional<PickleValue> Parse(const std::string& bytes, std::string* error) {
  return ParsePickle(bytes.data(), bytes.size(), PickleLimits{}, error);
}

}  // namespace ncclscope::flight_recorder::testing
