// Reads a scenario file into a Scenario and checks everything that does not depend on the job
// size (that part is checkScenarioForRanks in comm_layout.h).
#pragma once

#include <string>
#include <string_view>

#include "sim/scenario/json_node.h"
#include "sim/scenario/scenario.h"

namespace ncclscope::sim {

// Thread-safe (no shared state). Throw ScenarioError naming file, JSON path and the problem.
Scenario parseScenarioFile(const std::string& path);
Scenario parseScenarioText(std::string_view text, const std::string& file);

// Parts, shared by the parser files and used by tests.
OpSpec parseOp(const JsonNode& node);
FaultSpec parseFault(const JsonNode& node);
ComputeSpec parseCompute(const JsonNode& node);
AccelSpec parseAccel(const JsonNode& node);

// Cross-reference checks once everything is parsed: communicators, steps and ops named by
// faults exist, and each fault fits the op it addresses.
void checkReferences(const Scenario& s);

}  // namespace ncclscope::sim
