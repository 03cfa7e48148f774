// The CPU twin of ncclscope's MoE combine kernel (kernels/moe.cu, ncclscope_moe_combine), step for
// step, and ncclscope_moe_combine_on_cpu. Block b of every rank, exact combine:
//   source:  copy its chunk of the expert rows (sum of recv_counts, cut like tokens) into the
//            registered buffer; block 0 publishes how many rows this rank holds;
//   start:   grid-wide barrier: every rank's expert rows are visible;
//   receive: for each token of its chunk, sum weight x expert row over the token's slots in k
//            order (float32, fused multiply-add, from 0), reading each row where its dispatch put
//            it (send_rows) on the expert's rank, and round once into `out`; publish the block's
//            first error;
//   end:     grid-wide barrier: no rank rewrites its rows (next call) while a peer reads them;
//            block 0 writes the call's status.
// Rank sums (NCCLSCOPE_MOE_COMBINE_RANK_SUMS):
//   source:  copy its chunk of the tokens' routing, send_rows and weights into the registered
//            buffer; block 0 publishes the rows this rank holds and its tokens;
//   start:   grid-wide barrier;
//   middle:  as an expert rank, for token chunk b of every rank (rank + 1 first, itself last):
//            each token with slots here gets weight x expert row summed over them in k order
//            (float32, fused multiply-add, from 0, rows read from expert_out where they are),
//            rounded to the data type into the registered rows at the row of its first slot
//            here;
//   middle barrier: every rank's sums are visible;
//   receive: for each token of its chunk, add the sum of each rank with a slot, in the order of
//            those ranks' first slots (float32, from 0), and round again into `out`;
//   end:     as above.
#include <cmath>
#include <cstring>
#include <vector>

#include "collectives/moe/moe_elements.h"
#include "collectives/moe/moe_layout.h"
#include "collectives/moe/moe_twin_steps.h"
#include "collectives/twins/narrow_float.h"
#include "collectives/types/accel_types.h"

namespace ncclscope::collectives {
namespace {

struct Combine {
  const ncclscope_moe_combine_args& a;
  const MoeTwinCall& c;
  int32_t experts, top_k, local, hidden, dtype;
  int64_t row_bytes;

  const MoeBuffer& mine() const { return c.buffer[c.rank]; }
  MoeCallHeader* header(int q) const { return c.buffer[q].header(c.side.epoch); }

  int32_t Tokens(MoeError* err) const {
    const int32_t t = a.common.num_tokens;
    if (t >= 0 && t <= c.plan->config.max_tokens) return t;
    NoteError(err, NCCLSCOPE_MOE_TOO_MANY_TOKENS, t);
    return 0;
  }

  // The expert rows this rank holds, from its dispatch's counts; none when they cannot be a
  // dispatch's (reported).
  int32_t ExpertRows(MoeError* err) const {
    int64_t rows = 0;
    bool ok = true;
    for (int32_t e = 0; e < local; ++e) {
      ok = ok && a.recv_counts[e] >= 0;
      rows += a.recv_counts[e];
    }
    if (ok && rows <= c.plan->config.recv_capacity) return static_cast<int32_t>(rows);
    NoteError(err, NCCLSCOPE_MOE_BAD_HANDLE, -1);
    return 0;
  }

  void Source(uint32_t b, MoeError* err) const {
    const int32_t rows = ExpertRows(err);
    int32_t lo, hi;
    TokenChunk(rows, c.blocks, b, &lo, &hi);
    if (hi > lo) {  // expert_out may be null without rows
      std::memcpy(mine().rows() + lo * row_bytes,
                  static_cast<const unsigned char*>(a.expert_out) + lo * row_bytes,
                  static_cast<size_t>((hi - lo) * row_bytes));
    }
    if (b == 0) header(c.rank)->rows = rows;
  }

  // A token's entries in k order, as the kernel's thread 0 checks them (the first error it notes).
  void CheckToken(int32_t t, const int32_t* rows_of, MoeError* err) const {
    for (int32_t k = 0; k < top_k; ++k) {
      const int64_t entry = int64_t{t} * top_k + k;
      if (BadEntry(a.topk_idx[entry], experts)) NoteError(err, NCCLSCOPE_MOE_BAD_EXPERT, t);
      const int32_t e = UsedExpert(a.topk_idx[entry], experts);
      if (e < 0) continue;
      const int32_t row = a.send_rows[entry];
      if (row < 0 || row >= rows_of[e / local]) NoteError(err, NCCLSCOPE_MOE_BAD_HANDLE, t);
    }
  }

  // Token side, the last step of both modes: each token of chunk b checked, then `sum(t, rows_of,
  // acc)` adds its slots (exact) or its ranks' sums (rank sums) into acc, rounded into `out`.
  template <typename Sum>
  void ReceiveTokens(uint32_t b, MoeError* err, Sum sum) const {
    int32_t rows_of[kMaxRanks];
    for (int q = 0; q < c.nranks; ++q) rows_of[q] = header(q)->rows;
    int32_t lo, hi;
    TokenChunk(Tokens(err), c.blocks, b, &lo, &hi);
    std::vector<float> acc(static_cast<size_t>(hidden));
    for (int32_t t = lo; t < hi; ++t) {
      CheckToken(t, rows_of, err);
      std::fill(acc.begin(), acc.end(), 0.0f);
      sum(t, rows_of, acc.data());
      unsigned char* out = static_cast<unsigned char*>(a.out) + t * row_bytes;
      for (int32_t h = 0; h < hidden; ++h)
        StoreMoeElement(dtype, out, h, acc[static_cast<size_t>(h)]);
    }
  }

  void Receive(uint32_t b, MoeError* err) const {
    ReceiveTokens(b, err, [this](int32_t t, const int32_t* rows_of, float* acc) {
      for (int32_t k = 0; k < top_k; ++k) {
        const int64_t entry = int64_t{t} * top_k + k;
        const int32_t e = UsedExpert(a.topk_idx[entry], experts);
        if (e < 0) continue;
        const int q = e / local;
        const int32_t row = a.send_rows[entry];
        if (row < 0 || row >= rows_of[q]) continue;
        const float w = a.topk_weights[entry];
        const unsigned char* from = c.buffer[q].rows() + row * row_bytes;
        for (int32_t h = 0; h < hidden; ++h) {
          acc[h] = std::fma(w, LoadMoeElement(dtype, from, h), acc[h]);
        }
      }
    });
  }
};

// Combine's rank sums: the exact combine's token and row checks, its own three steps.
struct CombineRankSums : Combine {
  // Home side: the chunk's routing, rows and weights where the expert ranks read them.
  void Source(uint32_t b, MoeError* err) const {
    const int32_t rows = ExpertRows(err);
    const int32_t tokens = Tokens(err);
    int32_t lo, hi;
    TokenChunk(tokens, c.blocks, b, &lo, &hi);
    for (int64_t j = int64_t{lo} * top_k; j < int64_t{hi} * top_k; ++j) {
      mine().topk()[j] = a.topk_idx[j];
      mine().send_rows()[j] = a.send_rows[j];
      mine().weights()[j] = a.topk_weights[j];
    }
    if (b == 0) {
      header(c.rank)->rows = rows;
      header(c.rank)->num_tokens = tokens;
    }
  }

  // Expert side: this rank's sum for every token of chunk b of every rank with slots here.
  void Middle(uint32_t b, MoeError* err) const {
    const int32_t rows = ExpertRows(err);
    std::vector<float> acc(static_cast<size_t>(hidden));
    for (int j = 1; j <= c.nranks; ++j) {
      const int home = (c.rank + j) % c.nranks;  // rank+1 first, itself last
      const MoeBuffer& from = c.buffer[home];
      int32_t lo, hi;
      TokenChunk(header(home)->num_tokens, c.blocks, b, &lo, &hi);
      for (int32_t t = lo; t < hi; ++t) {
        const int32_t* topk = from.topk() + int64_t{t} * top_k;
        int32_t first_row = -1;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int32_t k = 0; k < top_k; ++k) {
          const int32_t e = UsedExpert(topk[k], experts);
          if (e < 0 || e / local != c.rank) continue;
          const int32_t row = from.send_rows()[int64_t{t} * top_k + k];
          if (row < 0 || row >= rows) continue;  // the token's rank reports it
          if (first_row < 0) {
            if (!FirstSlotOnItsRank(topk, k, experts, local)) break;  // its slot is not valid
            first_row = row;
          }
          const float w = from.weights()[int64_t{t} * top_k + k];
          const unsigned char* x =
              static_cast<const unsigned char*>(a.expert_out) + row * row_bytes;
          for (int32_t h = 0; h < hidden; ++h) {
            acc[static_cast<size_t>(h)] =
                std::fma(w, LoadMoeElement(dtype, x, h), acc[static_cast<size_t>(h)]);
          }
        }
        if (first_row < 0) continue;
        unsigned char* sum = mine().rows() + first_row * row_bytes;
        for (int32_t h = 0; h < hidden; ++h)
          StoreMoeElement(dtype, sum, h, acc[static_cast<size_t>(h)]);
      }
    }
  }

  // Home side: every token's rank sums, added in the order of their ranks' first slots.
  void Receive(uint32_t b, MoeError* err) const {
    ReceiveTokens(b, err, [this](int32_t t, const int32_t* rows_of, float* acc) {
      const int32_t* topk = a.topk_idx + int64_t{t} * top_k;
      for (int32_t k = 0; k < top_k; ++k) {
        if (!FirstSlotOnItsRank(topk, k, experts, local)) continue;
        const int q = UsedExpert(topk[k], experts) / local;
        const int32_t row = a.send_rows[int64_t{t} * top_k + k];
        if (row < 0 || row >= rows_of[q]) continue;
        const unsigned char* sum = c.buffer[q].rows() + row * row_bytes;
        for (int32_t h = 0; h < hidden; ++h) acc[h] += LoadMoeElement(dtype, sum, h);
      }
    });
  }
};

// The token arrays may be null when there are no tokens (or too many: reported, none read), and
// expert_out when recv_counts say no rows.
bool Plausible(const ncclscope_moe_combine_args& a) {
  if (!MoeArgsPlausible(a.common) || a.recv_counts == nullptr) return false;
  int64_t rows = 0;
  for (int32_t e = 0; e < a.common.plan.local_experts; ++e) rows += a.recv_counts[e];
  const bool tokens =
      a.common.num_tokens > 0 && a.common.num_tokens <= a.common.plan.config.max_tokens;
  return (rows <= 0 || a.expert_out != nullptr) && Aligned(a.expert_out, kPackBytes) &&
         Aligned(a.out, kPackBytes) &&
         (!tokens || (a.topk_idx != nullptr && a.send_rows != nullptr &&
                      a.topk_weights != nullptr && a.out != nullptr));
}

}  // namespace
}  // namespace ncclscope::collectives

extern "C" ncclscope_moe_result ncclscope_moe_combine_on_cpu(
    const ncclscope_moe_combine_args* args) {
  namespace nc = ncclscope::collectives;
  if (args == nullptr || !nc::Plausible(*args)) return NCCLSCOPE_MOE_INVALID_ARGUMENT;
  const nc::MoeTwinCall c = nc::MoeTwinCallOf(args->common);
  const ncclscope_moe_config& cfg = c.plan->config;
  const nc::Combine m{*args,      c,         cfg.num_experts,  cfg.top_k, c.plan->local_experts,
                      cfg.hidden, cfg.dtype, c.plan->row_bytes};
  if (cfg.combine == NCCLSCOPE_MOE_COMBINE_RANK_SUMS) {
    return nc::RunMoeBlocks<true>(c, nc::CombineRankSums{m}, [](uint32_t) {});
  }
  return nc::RunMoeBlocks(c, m, [](uint32_t) {});
}
