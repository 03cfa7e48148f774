// Whether ncclscope's exchange kernel serves the sends and receives of one ncclGroupStart/End on
// a communicator (the all-to-all(v) frameworks issue: torch's all_to_all_single with splits
// sends and receives per peer, skipping the empty ones), which of them, and how the kernel splits
// the work (docs/collectives.md, "Grouped sends and receives").
//
// Every decision is one both ranks of a pair reach alike from what both know, so a part never
// waits in ncclscope's kernel for a peer that sent it to NCCL: the communicator's facts (one node,
// peers mapped, GPU, size), and per pair the number and size of the operations between them (a
// send of s to d matches d's receive from s, in order and size: NCCL's own rule). No rank-local
// fact (a buffer's address, how many other parts a rank has) decides anything. Parts routed here
// run in one launch before the group's other parts reach NCCL, on every rank alike.
//
// A part: one peer and one direction with exactly one operation in the group, of whole 16-byte
// packs, to another rank, or to itself when the send to itself and the receive from itself are
// both alone and of one size. Pure: no CUDA, no allocation; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/planner/exchange_kernel_args.h"
#include "collectives/planner/planner.h"
#include "collectives/planner/tuning_table.h"
#include "collectives/types/accel_types.h"

namespace ncclscope::collectives {

// One ncclSend (send) or ncclRecv of the group, in call order.
struct ExchangeOp {
  int peer = -1;
  bool send = false;
  size_t bytes = 0;  // count x element size
};

struct ExchangeCall {
  const ExchangeOp* ops = nullptr;
  size_t nops = 0;
  int rank = 0;
  int nranks = 0;
  bool single_node = false;
  bool peers_reachable = false;
  bool capturing = false;
  GpuClass gpu = GpuClass::kUnknown;
  size_t buffer_bytes = SIZE_MAX;  // the communicator's staging buffer
};

struct ExchangePlan {
  Algorithm algorithm = Algorithm::kNccl;  // kExchange when at least one part is ours
  Fallback fallback = Fallback::kNone;     // why none is, when algorithm is kNccl
  uint32_t nparts = 0;
  uint32_t part_op[kMaxExchangeParts] = {};  // index in call.ops of each part ours, in call order
  uint32_t blocks_per_part = 0;
  uint32_t threads = 0;
  // The sender's staging holds two chunk slots per destination, used in turn
  // (exchange_kernel_args.h, ExchangeSlotOffset), each block of a part one share of a slot
  // (sub_bytes, whole packs); a chunk is what all of a part's blocks move at once: sub_bytes x
  // blocks_per_part.
  size_t slot_bytes = 0;
  size_t sub_bytes = 0;
  const ExchangeTuningRow* row = nullptr;
};

// Why op `i` of the call is not ours (kNone when it is), given the communicator's facts allow
// the exchange at all.
Fallback ExchangeOpFallback(const ExchangeCall& call, size_t i) noexcept;

ExchangePlan PlanExchange(const ExchangeCall& call) noexcept;

// Chunks a part of `bytes` takes (0 for none): both sides of a pair count the same.
uint64_t ExchangeChunks(const ExchangePlan& plan, size_t bytes) noexcept;

// "exchange (5 of 8 parts, 4x512 a part, 1048576-byte chunks; table row sm_90 2-8 ranks)" or
// "nccl: ranks on more than one host".
void ExplainExchangePlan(const ExchangePlan& p, const ExchangeCall& call, char* out,
                         size_t cap) noexcept;

}  // namespace ncclscope::collectives
