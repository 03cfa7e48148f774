// Where the end-to-end tests find the built programs and the source tree's scenarios (compile
// definitions set by tests/e2e/CMakeLists.txt).
#pragma once

#include <string>

namespace ncclscope::testing {

inline std::string BinDir() {
  return NCCLSCOPE_TEST_BIN_DIR;
}
inline std::string Cli() {
  return BinDir() + "/ncclscope";
}
inline std::string SimRank() {
  return BinDir() + "/ncclscope-sim-rank";
}
inline std::string ProbeLibrary() {
  return BinDir() + "/../lib/libncclscope.so";
}
inline std::string ScenarioPath(const std::string& name) {
  return std::string(NCCLSCOPE_TEST_SOURCE_DIR) + "/sim/scenarios/" + name;
}

}  // namespace ncclscope::testing
