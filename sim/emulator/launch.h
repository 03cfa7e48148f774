// Puts operations on their streams: the call returns at once, the work runs on stream workers.
#pragma once

#include <memory>
#include <vector>

#include "sim/emulator/op_run.h"

namespace ncclsim {

// Runs `ops` together (one call, or one group) on the stream of the first; every other stream
// involved waits for them, keeping its order. Takes ownership. Thread-safe.
void launchOps(std::vector<std::unique_ptr<OpRun>> ops, const std::vector<CUstream>& streams);

}  // namespace ncclsim
