// Where MoE dispatch puts every row (docs/collectives.md, "MoE dispatch/combine"), computed from
// the routing tables alone so that every rank, the CPU twin and the kernels agree without any
// further exchange. A rank's tokens are cut into one contiguous chunk per block; each chunk counts
// its entries per expert and numbers them ("slots", in token then k order). A receiving rank lays
// its rows out by (local expert, source rank, chunk, slot), which is (local expert, source rank,
// token, k): the offset of a (local expert, source rank) pair's rows in chunk b is the rows of
// all pairs before it plus the pair's rows in chunks before b. Pure, thread-safe.
#pragma once

#include <cstdint>

#include "collectives/types/accel_types.h"

namespace ncclscope::collectives {

// Token chunk b of `tokens` cut into `blocks` chunks: [*lo, *hi).
NCCLSCOPE_HOST_DEVICE inline void TokenChunk(int32_t tokens, uint32_t blocks, uint32_t b,
                                             int32_t* lo, int32_t* hi) {
  *lo = static_cast<int32_t>(static_cast<int64_t>(tokens) * b / blocks);
  *hi = static_cast<int32_t>(static_cast<int64_t>(tokens) * (b + 1) / blocks);
}

// A routing entry as dispatch takes it: an expert index, or -1 for an unused slot or one out of
// range (reported as NCCLSCOPE_MOE_BAD_EXPERT).
NCCLSCOPE_HOST_DEVICE inline int32_t UsedExpert(int32_t entry, int32_t num_experts) {
  return entry >= 0 && entry < num_experts ? entry : -1;
}

NCCLSCOPE_HOST_DEVICE inline bool BadEntry(int32_t entry, int32_t num_experts) {
  return entry < -1 || entry >= num_experts;
}

// Combine's rank sums: whether slot k of a token (`token_topk`: its top_k entries) is the first
// of its used slots whose expert is on the same rank, the slot whose row on that rank holds the
// rank's sum for the token.
NCCLSCOPE_HOST_DEVICE inline bool FirstSlotOnItsRank(const int32_t* token_topk, int32_t k,
                                                     int32_t num_experts, int32_t local_experts) {
  const int32_t e = UsedExpert(token_topk[k], num_experts);
  if (e < 0) return false;
  for (int32_t j = 0; j < k; ++j) {
    const int32_t f = UsedExpert(token_topk[j], num_experts);
    if (f >= 0 && f / local_experts == e / local_experts) return false;
  }
  return true;
}

// Source side, tokens [lo, hi) of a routing table with top_k entries per token: slot[j] (indexed
// like topk) gets entry j's number among the chunk's entries for the same expert, in (token, k)
// order, or -1 for an entry not used; counts[e] (num_experts long, zeroed by the caller) gets the
// chunk's entries per expert. *first_bad gets the token of the first entry out of range, when
// there is one and it is still -1.
void AssignSlots(const int32_t* topk, int32_t top_k, int32_t lo, int32_t hi, int32_t num_experts,
                 int32_t* slot, int32_t* counts, int32_t* first_bad) noexcept;

// Receiving side: rank `rank` of `nranks`, owning local_experts experts, for token chunk b of
// `blocks`. counts[p] is rank p's [num_experts][blocks] table (entries of chunk b' for expert e at
// e * blocks + b'). For pair i = e_local * nranks + p, offset[i] gets the first row of that pair's
// entries from chunk b; expert_rows[e_local] (when not null) the rows of each local expert.
// Returns the rows this rank receives.
int64_t ReceiveOffsets(const int32_t* const* counts, int rank, int nranks, int32_t local_experts,
                       uint32_t blocks, uint32_t b, int32_t* offset, int32_t* expert_rows) noexcept;

}  // namespace ncclscope::collectives
