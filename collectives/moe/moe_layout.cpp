#include "collectives/moe/moe_layout.h"

namespace ncclscope::collectives {

void AssignSlots(const int32_t* topk, int32_t top_k, int32_t lo, int32_t hi, int32_t num_experts,
                 int32_t* slot, int32_t* counts, int32_t* first_bad) noexcept {
  for (int64_t j = int64_t{lo} * top_k; j < int64_t{hi} * top_k; ++j) {
    if (BadEntry(topk[j], num_experts) && *first_bad < 0) {
      *first_bad = static_cast<int32_t>(j / top_k);
    }
    const int32_t e = UsedExpert(topk[j], num_experts);
    slot[j] = e < 0 ? -1 : counts[e]++;
  }
}

int64_t ReceiveOffsets(const int32_t* const* counts, int rank, int nranks, int32_t local_experts,
                       uint32_t blocks, uint32_t b, int32_t* offset,
                       int32_t* expert_rows) noexcept {
  int64_t rows = 0;  // the rows of every pair before the current one
  for (int32_t e = 0; e < local_experts; ++e) {
    const int64_t expert = int64_t{rank} * local_experts + e;
    int64_t expert_total = 0;
    for (int p = 0; p < nranks; ++p) {
      const int32_t* column = counts[p] + expert * blocks;
      int64_t before = 0;
      int64_t total = 0;
      for (uint32_t c = 0; c < blocks; ++c) {
        if (c < b) before += column[c];
        total += column[c];
      }
      offset[e * nranks + p] = static_cast<int32_t>(rows + before);
      rows += total;
      expert_total += total;
    }
    if (expert_rows != nullptr) expert_rows[e] = static_cast<int32_t>(expert_total);
  }
  return rows;
}

}  // namespace ncclscope::collectives
