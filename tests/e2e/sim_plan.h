// What a rank of a scenario was going to call (`ncclscope-sim-rank --plan`), and the check that the
// records of that rank are exactly those calls.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tests/e2e/dump_json.h"

namespace ncclscope::testing {

struct RankPlan {  // NOLINT(bugprone-exception-escape): a false positive on nlohmann::json members
  std::vector<nlohmann::json> calls;
  nlohmann::json stop;  // the "stop" line when a fault ends the rank, else null
};

// Runs the rank program in plan mode; fails the calling test (ADD_FAILURE) when it cannot.
RankPlan LoadPlan(const std::string& scenario_path, int rank, int nranks);

// Record i of `dump` is call i of `calls` for every i < min(sizes): same op, communicator name and
// every argument the call states (count, dtype, redop, root/peer, split color/key and child name,
// init rank/size), and NCCL returned success. Sizes are the caller's business (whole run or
// prefix). Reports the first differing record and stops there, since everything after it is
// shifted.
void ExpectRecordsMatchPlan(const RankDump& dump, const std::vector<nlohmann::json>& calls);

}  // namespace ncclscope::testing
