// Plays a scenario as one rank: communicators, then every step (compute, ops with their faults,
// stream synchronization, self-check), then teardown.
#pragma once

#include "sim/scenario/rank_options.h"

namespace ncclscope::sim {

// Returns the process exit code (rank_exit_codes.h) and prints one line per problem to stderr.
// Some faults make it never return (hang, stuck_before, never_join) or end the process. With
// opt.plan it runs the same code against plan_backend.h instead: prints the calls to stdout, and
// returns 0 wherever a fault would have ended or blocked the rank.
int runRank(const RankOptions& opt);

}  // namespace ncclscope::sim
