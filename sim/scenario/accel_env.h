// The probe's NCCLSCOPE_ACCEL* variables a scenario's "accel" key asks `ncclscope sim` to give
// every rank, and the launcher's line saying which of them the job gets.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/scenario/scenario.h"

namespace ncclscope::sim {

// NAME, value pairs: NCCLSCOPE_ACCEL always, the buffer (in bytes) and the timeout when set. Pure.
std::vector<std::pair<std::string, std::string>> accelEnvironment(const AccelSpec& accel);

// "accel from the scenario: NCCLSCOPE_ACCEL=1, ...; kept from the environment: NAME=V, ..." for
// `wanted` against the launcher's environment `base` (NAME=value strings), where a variable
// already set wins. Pure.
std::string describeAccelEnvironment(const std::vector<std::pair<std::string, std::string>>& wanted,
                                     char** base);

}  // namespace ncclscope::sim
