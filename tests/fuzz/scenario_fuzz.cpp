// Fuzz target: any text given to the scenario parser (`ncclscope sim --scenario`) is a scenario or
// a ScenarioError naming the file, never a crash and never another exception; a scenario that
// parses is then checked and laid out for jobs of several sizes the same way.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sim/scenario/comm_layout.h"
#include "sim/scenario/scenario_parser.h"

namespace {

constexpr char kFile[] = "fuzz.json";

// A ScenarioError must say where: "fuzz.json: PATH: MESSAGE".
void ExpectNamed(const ncclscope::sim::ScenarioError& e) {
  if (std::string_view(e.what()).substr(0, sizeof kFile - 1) != kFile) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ncclscope::sim::ScenarioError;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ncclscope::sim::Scenario s;
  try {
    s = ncclscope::sim::parseScenarioText(text, kFile);
  } catch (const ScenarioError& e) {
    ExpectNamed(e);
    return 0;
  }
  for (const int ranks : {1, 2, 8, 33}) {
    try {
      ncclscope::sim::checkScenarioForRanks(s, ranks);
      const ncclscope::sim::JobLayout layout(s, ranks);
      for (const auto& comm : layout.comms()) {
        if (comm.group_of.size() != static_cast<size_t>(ranks)) __builtin_trap();
      }
    } catch (const ScenarioError& e) {
      ExpectNamed(e);
    }
  }
  return 0;
}
