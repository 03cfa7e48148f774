// Pickle bytes in tests: built by hand (Bytes({0x80, 2, 'N', '.'})) or read from a file.
#pragma once

#include <fstream>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>

#include "trace/flight_recorder/pickle_reader.h"

namespace ncclscope::flight_recorder::testing {

// The whole file, byte for byte; empty when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

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
