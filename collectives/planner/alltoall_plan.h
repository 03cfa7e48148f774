// Whether ncclscope's all-to-all kernel serves an ncclAlltoAll call, or why NCCL does, and how the
// kernel splits the work (docs/collectives.md, "All-to-all"). ncclAlltoAll: every rank sends
// `count` elements to every rank, block j of its sendbuff to rank j, and receives rank i's block
// into recvbuff + i * count; the data type only sets the element size. Pure: no CUDA, no
// allocation; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/planner/planner.h"
#include "collectives/planner/tuning_table.h"
#include "collectives/types/accel_types.h"

namespace ncclscope::collectives {

// What the routing knows of one ncclAlltoAll call and its communicator.
struct AlltoAllCall {
  int32_t nccl_dtype = 0;
  size_t count = 0;  // elements per peer, as ncclAlltoAll's count
  int nranks = 0;
  bool single_node = false;       // every rank of the communicator on this host
  bool peers_reachable = false;   // every peer's memory mapped (NVLink or PCIe P2P)
  bool capturing = false;         // the stream is being captured into a CUDA graph
  bool in_place = false;          // sendbuff == recvbuff
  bool input_registered = false;  // sendbuff lies in memory every peer has mapped
  GpuClass gpu = GpuClass::kUnknown;
  size_t buffer_bytes = SIZE_MAX;  // the communicator's staging buffer
};

struct AlltoAllPlan {
  Algorithm algorithm = Algorithm::kNccl;  // kPull or kNccl
  Fallback fallback = Fallback::kNone;
  size_t element_bytes = 0;
  size_t bytes = 0;           // a rank's whole sendbuff: count x element size x ranks
  size_t packs_per_peer = 0;  // count x element size / kPackBytes
  bool copy_in = false;       // the input is copied into the registered staging buffer first
  uint32_t blocks = 0;
  uint32_t threads = 0;
  const AlltoAllTuningRow* row = nullptr;  // the table row the choice came from
};

// ncclTypeSize of an ncclDataType_t (NCCL v2.28: int8 .. float8e5m2), 0 for a value NCCL lacks.
size_t NcclTypeBytes(int32_t nccl_dtype) noexcept;

AlltoAllPlan PlanAlltoAll(const AlltoAllCall& call) noexcept;

// One line for `ncclscope` and the logs: "pull (8 ranks x 4096 bytes, 2-byte elements, 36x512,
// copy-in; table row sm_90 2-8 ranks)" or "nccl: count 0".
void ExplainAlltoAllPlan(const AlltoAllPlan& p, const AlltoAllCall& call, char* out,
                         size_t cap) noexcept;

}  // namespace ncclscope::collectives
