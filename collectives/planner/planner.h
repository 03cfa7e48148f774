// Which of ncclscope's AllReduce kernels serves a call, or why NCCL does (the interposer's routing
// and `ncclscope`'s explanation of it, docs/collectives.md), and how the chosen kernel splits the
// work. Pure: no CUDA, no allocation; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/planner/tuning_table.h"
#include "collectives/types/accel_types.h"

namespace ncclscope::collectives {

// What the routing knows of one ncclAllReduce call and its communicator.
struct AllReduceCall {
  int32_t nccl_dtype = 0;
  int32_t nccl_redop = 0;  // ncclRedOp_t; only ncclSum (0) is accelerated
  size_t count = 0;
  int nranks = 0;
  bool single_node = false;       // every rank of the communicator on this host
  bool peers_reachable = false;   // every peer's memory mapped (NVLink or PCIe P2P)
  bool capturing = false;         // the stream is being captured into a CUDA graph
  bool in_place = false;          // sendbuff == recvbuff
  bool input_registered = false;  // sendbuff lies in memory every peer has mapped
  GpuClass gpu = GpuClass::kUnknown;
  size_t buffer_bytes = SIZE_MAX;  // the communicator's staging and scratch buffers
};

// Why a call goes to NCCL; kNone when it is ours.
enum class Fallback : uint8_t {
  kNone,
  kDtype,         // not fp16, bf16 or fp32
  kRedop,         // not a sum
  kRanks,         // 1 rank, or more than kMaxRanks
  kNotOneNode,    // a rank on another host
  kNoPeerAccess,  // a peer's memory cannot be mapped
  kGpu,           // not a GPU generation the kernels are built for
  kCapture,       // stream capture: captured addresses are not registered (docs/collectives.md)
  kAlignment,     // not a whole number of 16-byte packs
  kEmpty,         // count 0: NCCL's own no-op
  kTooLarge,      // past the table's two-shot limit
  kBuffer,        // larger than the communicator's staging buffer (NCCLSCOPE_ACCEL_BUFFER)
  // All-to-all (alltoall_plan.h); appended so the values above keep their numbers.
  kDtypeUnknown,      // not one of NCCL's data types: its element size is unknown
  kAlltoAllTooLarge,  // past the table's all-to-all limit
  // Grouped sends and receives (exchange_plan.h).
  kSeveralOnPair,  // more than one send to (receive from) that peer in the group
  kSelfUnpaired,   // a send to itself without one matching receive from itself, or the reverse
  kPeer,           // a peer outside the communicator (NCCL's to refuse)
};
const char* FallbackText(Fallback f) noexcept;

struct AllReducePlan {
  Algorithm algorithm = Algorithm::kNccl;
  Fallback fallback = Fallback::kNone;
  Dtype dtype = Dtype::kFp32;
  size_t bytes = 0;
  size_t packs = 0;      // bytes / kPackBytes
  bool copy_in = false;  // the input is copied into the registered staging buffer first
  uint32_t blocks = 0;
  uint32_t threads = 0;
  const TuningRow* row = nullptr;  // the table row the choice came from
};

AllReducePlan PlanAllReduce(const AllReduceCall& call) noexcept;

// The packs [begin, end) of rank r's slice in two-shot: consecutive, as even as whole packs allow.
inline size_t SliceBegin(size_t packs, int nranks, int r) {
  return packs * static_cast<size_t>(r) / static_cast<size_t>(nranks);
}

// One line for `ncclscope` and the logs: "two-shot (bf16, 1048576 bytes, 8 ranks, 36x512, copy-in;
// table row sm_90 5-8 ranks)" or "nccl: not a sum".
void ExplainPlan(const AllReducePlan& p, const AllReduceCall& call, char* out, size_t cap) noexcept;

}  // namespace ncclscope::collectives
