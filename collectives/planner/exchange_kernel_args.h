// What the host passes to ncclscope's exchange kernel (kernels/exchange.cu) and its CPU twin
// (twins/exchange_twin.h), by value as the launch's one parameter: the parts of one group's sends
// and receives that the plan gave ncclscope (exchange_plan.h), with each pair's chunk counter.
#pragma once

#include <cstdint>

#include "collectives/planner/allreduce_kernel_args.h"
#include "collectives/planner/epoch.h"
#include "collectives/types/accel_types.h"

namespace ncclscope::collectives {

// At most one send and one receive per peer run on ncclscope's kernel (exchange_plan.h).
inline constexpr uint32_t kMaxExchangeParts = 2 * kMaxRanks;

struct ExchangePartArgs {
  unsigned char* user;   // a send's sendbuff (read) or a receive's recvbuff (written)
  uint64_t bytes;        // whole packs
  uint32_t first_chunk;  // chunks of this pair and direction before this part (both sides agree)
  int32_t peer;
  int32_t send;
  int32_t pad;
};

struct ExchangeKernelArgs {
  unsigned char* staging[kMaxRanks];  // every rank's staging buffer as mapped here
  Signal* signal[kMaxRanks];
  KernelStall* stall;
  ExchangePartArgs part[kMaxExchangeParts];
  uint64_t slot_bytes;  // one chunk slot in the sender's staging (ExchangeSlotOffset)
  uint64_t sub_bytes;   // one block's share of a slot: slot_bytes / blocks_per_part
  uint64_t timeout_ns;  // every wait ends this long after the kernel started
  int32_t rank;
  int32_t nranks;
  uint32_t nparts;
  uint32_t blocks_per_part;  // the grid is nparts x blocks_per_part blocks
};

// Each destination has two chunk slots in its sender's staging, used in turn by the pair's running
// chunk count k (from 1): the sender fills chunk k + 1 while the receiver still copies chunk k out,
// and waits only for chunk k - 1's slot to be freed. So a sender's staging holds
// kExchangeSlotsPerPeer x nranks chunks.
inline constexpr uint32_t kExchangeSlotsPerPeer = 2;

// Where chunk k of the pair (sender -> dest) lies in the sender's staging.
NCCLSCOPE_HOST_DEVICE inline uint64_t ExchangeSlotOffset(int dest, uint32_t k,
                                                         uint64_t slot_bytes) {
  return (static_cast<uint64_t>(dest) * kExchangeSlotsPerPeer + k % kExchangeSlotsPerPeer) *
         slot_bytes;
}

// The kernel's entry point as the fatbin names it.
inline constexpr const char* kExchangeKernelName = "ncclscope_exchange";

}  // namespace ncclscope::collectives
