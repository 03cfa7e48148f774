// NCCLSCOPE_ACCEL: whether an interposed ncclAllReduce or ncclAlltoAll runs on ncclscope's own
// kernels (docs/collectives.md). Off by default; off, it costs the interposer one predicted branch.
#pragma once

#include <nccl.h>

#include <cstddef>

#include "plugin/call_frame.h"
#include "plugin/comm_state.h"

namespace ncclscope::plugin {

// Runs the call on ncclscope's kernels when it is eligible (the communicator set up at its first
// eligible call, collectively) and returns true with *result what the call returns; false: the
// caller sends it to NCCL. Every rank of a communicator decides alike from what they agreed on.
bool RouteAllReduce(const CallFrame& f, CommState* cs, ncclComm_t comm, const void* sendbuff,
                    void* recvbuff, size_t count, ncclDataType_t dtype, ncclRedOp_t op,
                    cudaStream_t stream, ncclResult_t* result) noexcept;

// The same for an ncclAlltoAll (collectives/alltoall_plan.h).
bool RouteAlltoAll(const CallFrame& f, CommState* cs, ncclComm_t comm, const void* sendbuff,
                   void* recvbuff, size_t count, ncclDataType_t dtype, cudaStream_t stream,
                   ncclResult_t* result) noexcept;

}  // namespace ncclscope::plugin
