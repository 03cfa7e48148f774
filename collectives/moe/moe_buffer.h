// The registered buffer of ncclscope's MoE dispatch and combine (include/ncclscope/moe.h), as the
// CPU twin and the kernels address it: the regions whose byte offsets ncclscope_moe_plan_make
// chose, and the per-call header every rank publishes to its peers. Shared by host and device
// code; no allocation, no state.
#pragma once

#include <cstdint>

#include "collectives/include/ncclscope/moe.h"
#include "collectives/planner/epoch.h"
#include "collectives/types/accel_types.h"

namespace ncclscope::collectives {

static_assert(NCCLSCOPE_MOE_MAX_RANKS == kMaxRanks);
static_assert(NCCLSCOPE_MOE_MAX_BLOCKS == kMaxBlocks);

// The first error one block of one rank found in a call (ncclscope_moe_result), 0 when none.
struct MoeError {
  int32_t code;
  int32_t detail;
};

// What a rank tells its peers about one call. Two of them, used by epoch parity: a rank reads its
// peers' headers after the call's end barrier, while they may already be in the next call; the one
// after that cannot start before every rank has finished reading (its start barrier).
struct MoeCallHeader {
  int32_t num_tokens;  // dispatch, and combine's rank sums: this rank's tokens (written by block 0
                       // before the start barrier)
  int32_t rows;        // combine: the expert rows it holds (block 0, before the start barrier)
  MoeError error[kMaxBlocks];  // block b's, written before its end barrier
};

// The regions of one rank's registered buffer.
struct MoeBuffer {
  unsigned char* base;
  const ncclscope_moe_plan* plan;

  NCCLSCOPE_HOST_DEVICE Signal* signal() const {
    return reinterpret_cast<Signal*>(base + plan->buffer_signal);
  }
  NCCLSCOPE_HOST_DEVICE MoeCallHeader* header(uint32_t epoch) const {
    return reinterpret_cast<MoeCallHeader*>(base + plan->buffer_header) + (epoch & 1u);
  }
  // [num_experts][blocks]: the entries of token chunk b routed to expert e, at e * blocks + b.
  NCCLSCOPE_HOST_DEVICE int32_t* counts() const {
    return reinterpret_cast<int32_t*>(base + plan->buffer_counts);
  }
  NCCLSCOPE_HOST_DEVICE int32_t* topk() const {
    return reinterpret_cast<int32_t*>(base + plan->buffer_topk);
  }
  NCCLSCOPE_HOST_DEVICE int32_t* slot() const {
    return reinterpret_cast<int32_t*>(base + plan->buffer_slot);
  }
  NCCLSCOPE_HOST_DEVICE int32_t* send_rows() const {
    return reinterpret_cast<int32_t*>(base + plan->buffer_send_rows);
  }
  NCCLSCOPE_HOST_DEVICE unsigned char* rows() const { return base + plan->buffer_rows; }
  // [max_tokens][top_k]: combine's weights, copied in (rank sums).
  NCCLSCOPE_HOST_DEVICE float* weights() const {
    return reinterpret_cast<float*>(base + plan->buffer_weights);
  }
  // The epoch of the last call on this buffer, read by NCCLSCOPE_MOE_DEVICE_EPOCH calls; only its
  // own rank touches it.
  NCCLSCOPE_HOST_DEVICE uint32_t* last_epoch() const {
    return reinterpret_cast<uint32_t*>(base + plan->buffer_epoch);
  }
};

}  // namespace ncclscope::collectives
