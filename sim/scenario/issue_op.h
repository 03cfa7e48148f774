// Issues one op (collective or pipeline send/recv) through a rank backend's NCCL API on a stream.
#pragma once

#include <cuda.h>
#include <nccl.h>

#include "sim/scenario/op_data.h"
#include "sim/scenario/rank_backend.h"

namespace ncclscope::sim {

// Enqueues `call` with `buffers` (which must live until the stream is synchronized) on `comm`'s
// stream. premulsum creates and destroys its dynamic reduction around the call. Returns the first
// NCCL error. Not thread-safe per communicator (like NCCL itself).
ncclResult_t issueOp(RankBackend& nccl, const OpCall& call, OpBuffers& buffers, ncclComm_t comm,
                     CUstream stream);

}  // namespace ncclscope::sim
