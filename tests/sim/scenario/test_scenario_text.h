// Helpers for scenario tests: parse inline JSON and capture the error a bad one produces.
#pragma once

#include <string>

#include "sim/scenario/scenario_parser.h"

namespace ncclscope::sim::testing {

inline Scenario parse(const std::string& json) {
  return parseScenarioText(json, "test.json");
}

// The what() of the ScenarioError parsing `json` throws, or "" when it parses.
inline std::string parseError(const std::string& json) {
  try {
    parse(json);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

// A minimal valid scenario with `faults` spliced in (a JSON array text).
inline std::string withFaults(const std::string& faults) {
  return R"({"communicators": [{"name": "tp", "split": {"by": "block", "size": 2}}],
             "repeat": 2,
             "steps": [{"ops": [{"op": "allreduce", "comm": "tp", "count": 8},
                                {"op": "broadcast", "count": 8, "root": 0},
                                {"op": "pipeline", "count": 8}]}],
             "faults": )" +
         faults + "}";
}

}  // namespace ncclscope::sim::testing
