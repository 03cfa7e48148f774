// Creates this rank's communicators (world by ncclCommInitRankConfig, the rest by ncclCommSplit,
// each named after its scenario name through ncclConfig_t.commName) and one stream per
// communicator, honoring never_join faults.
#pragma once

#include <cuda.h>
#include <nccl.h>

#include <string>
#include <vector>

#include "sim/scenario/comm_layout.h"
#include "sim/scenario/rank_backend.h"
#include "sim/scenario/rank_faults.h"
#include "sim/scenario/rank_options.h"

namespace ncclscope::sim {

// Indexed like JobLayout::comms(). Owns the handles; destroyComms releases them.
struct RankComms {
  std::vector<ncclComm_t> comms;
  std::vector<CUstream> streams;
};

// Returns an exit code from rank_exit_codes.h; kRankOk on success, else `error` says what failed.
// Never returns for a rank with a never_join fault on one of the communicators.
int createComms(RankBackend& backend, const RankOptions& opt, const JobLayout& job,
                const RankFaults& faults, RankComms& out, std::string& error);

// Destroys communicators (children first) and streams. Returns false and sets `error` on the
// first failure.
bool destroyComms(RankBackend& backend, RankComms& rc, std::string& error);

}  // namespace ncclscope::sim
