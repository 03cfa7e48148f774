// The CPU twin of ncclscope's all-to-all kernel (kernels/alltoall.cu): the same plan, blocks and
// thread-to-pack mapping, the same flags and barriers, run by one CPU thread per rank over memory
// every rank maps (threads of a test, or the emulator's rank processes over shared memory).
//
// The algorithm, "pull" (docs/collectives.md, "All-to-all"): each rank copies its sendbuff into its
// registered staging buffer (copy-in), crosses a start barrier, then reads block `rank` of every
// rank's staging into its own recvbuff at peer x count, and crosses an end barrier so no rank
// rewrites its staging (the next call's copy-in) while a peer still reads it. Pull rather than push
// because the user's recvbuff is not registered: a rank can only write its own output, and
// pushing into peers' receive staging would need a second copy out of it and one more barrier.
// One copy-in at HBM speed plus one read over the links per byte is the least an unregistered
// all-to-all can do. A rank reads its peers in the order rank+1, rank+2, ... so that the ranks do
// not all read rank 0 first.
//
// Mapping: the packs of each peer's block are mapped alike (index i of the block, 0 <= i <
// packs_per_peer, goes to block and thread of ForEachPackOfBlock(0, packs_per_peer)) in the
// copy-in and in the pull, so the pack that block b of rank r reads from rank p's staging was
// copied in by block b of rank p: the start barrier of block b is what makes it visible.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/planner/alltoall_plan.h"
#include "collectives/twins/bounded_wait.h"

namespace ncclscope::collectives {

// The registered memory of every rank, as this rank has it mapped (index: rank).
struct AlltoAllPeerMemory {
  unsigned char* staging[kMaxRanks];  // plan.bytes at least: the sendbuff, when copied in
  Signal* signal[kMaxRanks];
};

struct AlltoAllTwinCall {
  const AlltoAllPlan* plan = nullptr;
  int rank = 0;
  int nranks = 0;
  uint32_t epoch = 0;           // this call's: one more than the communicator's previous call
  const void* input = nullptr;  // the user's sendbuff (registered: peers read it in place)
  void* output = nullptr;       // the user's recvbuff
  const void* peer_input[kMaxRanks] = {};  // each rank's sendbuff as mapped here (not copy_in)
  int64_t deadline_ns = 0;                 // every wait ends by then (MonotonicNs)
};

// Runs this rank's part of one all-to-all. Returns true when done; false when a wait expired, with
// *stall saying where (the output is then undefined).
bool RunAlltoAllTwin(const AlltoAllTwinCall& call, const AlltoAllPeerMemory& mem,
                     Stall* stall) noexcept;

}  // namespace ncclscope::collectives
