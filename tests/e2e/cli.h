// The ncclscope command as a user runs it: `ncclscope sim` jobs and `ncclscope dump --json`.
#pragma once

#include <map>
#include <string>

#include "tests/e2e/dump_json.h"
#include "tests/e2e/subprocess.h"

namespace ncclscope::testing {

// ncclscope's exit status for unusable input (docs/design.md).
constexpr int kUnusableInput = 3;

// A job that hangs on purpose: the launcher (`--timeout`) ends it this long after its start, past
// analyze's 2 s stall threshold with time to spare for starting the ranks on a loaded machine (as
// tests/hang_detector/analyze_scenarios_test.cpp).
constexpr double kKillAfterS = 5;

// `ncclscope sim --ranks N --scenario <sim/scenarios/NAME> --dir DIR --timeout S`. Small rings
// (NCCLSCOPE_RING_RECORDS) keep 32-rank jobs cheap; `env` adds to or overrides that.
ProcessResult RunSim(const std::string& scenario, int ranks, const std::string& dir,
                     double timeout_s, const std::map<std::string, std::string>& env = {});

// `ncclscope dump DIR --json`, parsed. Fails the calling test when dump does not exit 0.
std::map<int, RankDump> DumpJson(const std::string& dir);

}  // namespace ncclscope::testing
