// NCCLSCOPE_ACCEL for grouped sends and receives (collectives/planner/exchange_plan.h,
// docs/collectives.md "Grouped sends and receives"): inside a user's ncclGroupStart/End, the
// ncclSend and ncclRecv calls on one communicator whose ncclscope side is already set up (at an
// earlier eligible AllReduce or AlltoAll, a point every rank reaches together; a communicator only
// ever used for sends and receives is never set up here) are held back instead of reaching NCCL at
// once. At the group's outermost end the planner picks the parts both ranks of each pair agree on,
// one exchange kernel runs them, the others reach NCCL (still inside the group, so NCCL's own
// kernel runs after ours on every rank alike), and every call is recorded in call order as it would
// have been, routed ones marked as run by ncclscope. Any other call of the group first lets what is
// held reach NCCL unchanged, in order. The calling thread only, as NCCL requires of a communicator.
#pragma once

#include <nccl.h>

#include <cstddef>

#include "plugin/runtime/call_frame.h"
#include "plugin/runtime/comm_state.h"

namespace ncclscope::plugin {

// Holds a send or receive back when it can be (inside a group, NCCLSCOPE_ACCEL on, the
// communicator set up and ready, a peer and data type NCCL would take, room left); true with
// *result ncclSuccess then, and the call is done. `d` is its record as made at the call.
bool HoldP2p(const CallFrame& f, CommState* cs, ncclComm_t comm, bool send, void* buffer,
             size_t count, ncclDataType_t dtype, int peer, cudaStream_t stream,
             const trace::RecordData& d) noexcept;

// Sends whatever this thread holds to NCCL now, in call order, and records it: before any other
// call of the group, or a group end that launches nothing.
void FlushHeldP2p(const CallFrame& f) noexcept;

// At the outermost ncclGroupEnd, before it reaches NCCL: the held calls run on ncclscope's exchange
// kernel or reach NCCL, as the plan says.
void EndHeldGroup(const CallFrame& f) noexcept;

}  // namespace ncclscope::plugin
