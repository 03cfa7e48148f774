// NCCLSCOPE_ACCEL: whether an interposed ncclAllReduce or ncclAlltoAll runs on ncclscope's own
// kernels (docs/collectives.md). Off by default; off, it costs the interposer one predicted branch.
#pragma once

#include <nccl.h>

#include <cstddef>

#include "cuda/driver.h"
#include "plugin/runtime/call_frame.h"
#include "plugin/runtime/comm_state.h"

namespace ncclscope::plugin {

// The process's driver table (cuda/driver.h), checked for what the collectives call once at the
// first routed call; null (one warning) when it cannot be loaded or lacks one. Thread-safe.
const cuda::Driver* LoadedAccelDriver(const Config& config) noexcept;
// Whether `stream` is being captured into a CUDA graph (or its state cannot be read).
bool StreamCapturing(const cuda::Driver& cu, cudaStream_t stream) noexcept;

// Runs the call on ncclscope's kernels when it is eligible (the communicator set up at its first
// eligible call, collectively) and returns true with *result what the call returns; false: the
// caller sends it to NCCL. Every rank of a communicator decides alike from what they agreed on.
bool RouteAllReduce(const CallFrame& f, CommState* cs, ncclComm_t comm, const void* sendbuff,
                    void* recvbuff, size_t count, ncclDataType_t dtype, ncclRedOp_t op,
                    cudaStream_t stream, ncclResult_t* result) noexcept;

// Sets a communicator's side up right after its blocking creation returned on this rank: every
// member is then at the same point, as at its first eligible call, so a communicator that only
// ever carries sends and receives (pipeline stages, an expert-parallel all-to-all lowered to
// grouped ncclSend/ncclRecv) gets ncclscope's exchange too. Skipped inside a group and for a
// non-blocking creation (not usable yet): the first eligible call sets those up.
void SetUpAccelAtCreation(const CallFrame& f, ncclComm_t comm) noexcept;

// The same for an ncclAlltoAll (collectives/planner/alltoall_plan.h).
bool RouteAlltoAll(const CallFrame& f, CommState* cs, ncclComm_t comm, const void* sendbuff,
                   void* recvbuff, size_t count, ncclDataType_t dtype, cudaStream_t stream,
                   ncclResult_t* result) noexcept;

}  // namespace ncclscope::plugin
