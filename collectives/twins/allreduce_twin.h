// The CPU twin of ncclscope's AllReduce kernels: the same plan, the same blocks and thread-to-pack
// mapping, the same flags and barriers, the same fixed-order fp32 reduction and narrowing, run by
// one CPU thread per rank over memory every rank maps (threads of a test, or the emulator's rank
// processes over shared memory). Step for step what the kernels do, so the emulator's results and
// the protocol's correctness (flags, epochs, wrap-around, the same-pack-same-block rule of
// two-shot) are tested where no GPU is (docs/collectives.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/planner/planner.h"
#include "collectives/twins/bounded_wait.h"

namespace ncclscope::collectives {

// The registered memory of every rank, as this rank has it mapped (index: rank).
struct PeerMemory {
  unsigned char* staging[kMaxRanks];  // plan.bytes at least: the input, when copied in
  unsigned char* scratch[kMaxRanks];  // plan.bytes at least: two-shot's reduced slices
  Signal* signal[kMaxRanks];
};

struct TwinCall {
  const AllReducePlan* plan = nullptr;
  int rank = 0;
  int nranks = 0;
  uint32_t epoch = 0;           // this call's: one more than the communicator's previous call
  const void* input = nullptr;  // the user's sendbuff (registered: peers read it in place)
  void* output = nullptr;       // the user's recvbuff
  const void* peer_input[kMaxRanks] = {};  // each rank's sendbuff as mapped here (not copy_in)
  int64_t deadline_ns = 0;                 // every wait ends by then (MonotonicNs)
};

// Runs this rank's part of one AllReduce. Returns true when done; false when a wait expired, with
// *stall saying where (the output is then undefined and the call must not be retried in place).
bool RunAllReduceTwin(const TwinCall& call, const PeerMemory& mem, Stall* stall) noexcept;

}  // namespace ncclscope::collectives
