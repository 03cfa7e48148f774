// Cross-rank checks of a recorded job: what every rank recorded must agree with the others.
#pragma once

#include <map>

#include "tests/e2e/dump_json.h"

namespace ncclscope::testing {

// For every communicator: its member ranks recorded the same collectives (op, count, dtype, redop,
// root) under the same contiguous sequence numbers 1..N, and the comm table agrees on its size.
void ExpectCollectivesAgree(const std::map<int, RankDump>& dump);

// For every communicator and ordered pair (A, B): A's k-th send to B and B's k-th receive from A
// carry the same sequence number k, count and dtype.
void ExpectSendRecvMatch(const std::map<int, RankDump>& dump);

}  // namespace ncclscope::testing
