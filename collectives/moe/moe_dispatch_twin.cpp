// The CPU twin of ncclscope's MoE dispatch kernel (kernels/moe.cu, ncclscope_moe_dispatch), step
// for step, and ncclscope_moe_dispatch_on_cpu. Block b of every rank owns token chunk b of that
// rank (moe_layout.h):
//   source:  copy the chunk's rows and routing into the registered buffer, number its entries per
//            expert (slots), publish its per-expert counts, mark its send_rows not sent (-1);
//   start:   grid-wide barrier: every rank's counts, routing and rows are visible;
//   receive: compute this rank's offsets for chunk b from every rank's counts (the same on every
//            block); unless the rows overflow recv_capacity, pull chunk b's entries routed here
//            from every peer (rank+1 first, itself last) into recv_x, with their sources, and
//            tell each source the row (its send_rows); publish the block's first error;
//   end:     grid-wide barrier: no rank rewrites its buffer (next call) while a peer reads it,
//            and every send_rows and error is visible;
//   finish:  copy the chunk's send_rows out; block 0 writes the call's status.
// Pull, as in the all-to-all (docs/collectives.md): recv_x is the user's, not mapped by peers.
#include <cstring>
#include <vector>

#include "collectives/moe/moe_layout.h"
#include "collectives/moe/moe_twin_steps.h"

namespace ncclscope::collectives {
namespace {

struct Dispatch {
  const ncclscope_moe_dispatch_args& a;
  const MoeTwinCall& c;
  int32_t experts, top_k, local;
  int64_t row_bytes;

  const MoeBuffer& mine() const { return c.buffer[c.rank]; }
  MoeCallHeader* header(int q) const { return c.buffer[q].header(c.side.epoch); }

  // The tokens this rank dispatches: num_tokens, or none when out of range (reported).
  int32_t Tokens(MoeError* err) const {
    const int32_t t = a.common.num_tokens;
    if (t >= 0 && t <= c.plan->config.max_tokens) return t;
    NoteError(err, NCCLSCOPE_MOE_TOO_MANY_TOKENS, t);
    return 0;
  }

  void Source(uint32_t b, MoeError* err) const {
    const int32_t tokens = Tokens(err);
    int32_t lo, hi;
    TokenChunk(tokens, c.blocks, b, &lo, &hi);
    const int64_t first = int64_t{lo} * top_k, last = int64_t{hi} * top_k;
    if (hi > lo) {  // x and topk_idx may be null without tokens
      std::memcpy(mine().rows() + lo * row_bytes,
                  static_cast<const unsigned char*>(a.x) + lo * row_bytes,
                  static_cast<size_t>((hi - lo) * row_bytes));
      std::memcpy(mine().topk() + first, a.topk_idx + first, static_cast<size_t>(last - first) * 4);
    }
    std::vector<int32_t> per_expert(static_cast<size_t>(experts), 0);
    int32_t bad = -1;
    AssignSlots(a.topk_idx, top_k, lo, hi, experts, mine().slot(), per_expert.data(), &bad);
    if (bad >= 0) NoteError(err, NCCLSCOPE_MOE_BAD_EXPERT, bad);
    for (int32_t e = 0; e < experts; ++e) {
      mine().counts()[int64_t{e} * c.blocks + b] = per_expert[static_cast<size_t>(e)];
    }
    for (int64_t j = first; j < last; ++j) mine().send_rows()[j] = -1;
    if (b == 0) header(c.rank)->num_tokens = tokens;
  }

  void Receive(uint32_t b, MoeError* err) const {
    const int32_t* counts[kMaxRanks];
    for (int q = 0; q < c.nranks; ++q) counts[q] = c.buffer[q].counts();
    std::vector<int32_t> offset(static_cast<size_t>(experts));
    std::vector<int32_t> expert_rows(static_cast<size_t>(local));
    const int64_t rows = ReceiveOffsets(counts, c.rank, c.nranks, local, c.blocks, b, offset.data(),
                                        expert_rows.data());
    if (b == 0) std::memcpy(a.recv_counts, expert_rows.data(), expert_rows.size() * 4);
    if (rows > c.plan->config.recv_capacity) {
      NoteError(err, NCCLSCOPE_MOE_RECV_OVERFLOW, static_cast<int32_t>(rows));
      return;
    }
    const int32_t own_first = c.rank * local;
    for (int j = 1; j <= c.nranks; ++j) {
      const int p = (c.rank + j) % c.nranks;  // rank+1 first, itself last
      const MoeBuffer& from = c.buffer[p];
      int32_t lo, hi;
      TokenChunk(header(p)->num_tokens, c.blocks, b, &lo, &hi);
      // Token by token, as the kernel, which reads a token's row over the link once and writes
      // it to every one of its entries routed here.
      for (int32_t token = lo; token < hi; ++token) {
        const unsigned char* source_row = nullptr;
        for (int64_t entry = int64_t{token} * top_k; entry < int64_t{token + 1} * top_k; ++entry) {
          const int32_t e = from.topk()[entry];
          if (e < own_first || e >= own_first + local) continue;
          const int32_t row =
              offset[static_cast<size_t>(e - own_first) * static_cast<size_t>(c.nranks) +
                     static_cast<size_t>(p)] +
              from.slot()[entry];
          if (source_row == nullptr) source_row = from.rows() + token * row_bytes;
          std::memcpy(static_cast<unsigned char*>(a.recv_x) + row * row_bytes, source_row,
                      static_cast<size_t>(row_bytes));
          a.recv_src[row] = ncclscope_moe_source{p, token, static_cast<int32_t>(entry % top_k)};
          from.send_rows()[entry] = row;
        }
      }
    }
  }

  void Finish(uint32_t b) const {
    int32_t lo, hi;
    TokenChunk(header(c.rank)->num_tokens, c.blocks, b, &lo, &hi);
    const int64_t first = int64_t{lo} * top_k;
    if (hi == lo) return;  // send_rows may be null without tokens
    std::memcpy(a.send_rows + first, mine().send_rows() + first,
                static_cast<size_t>(int64_t{hi - lo} * top_k) * 4);
  }
};

// The token arrays may be null when there are no tokens (or too many: reported, none read).
bool Plausible(const ncclscope_moe_dispatch_args& a) {
  const bool tokens =
      a.common.num_tokens > 0 && a.common.num_tokens <= a.common.plan.config.max_tokens;
  return MoeArgsPlausible(a.common) && a.recv_x != nullptr && Aligned(a.recv_x, kPackBytes) &&
         Aligned(a.x, kPackBytes) && a.recv_src != nullptr && a.recv_counts != nullptr &&
         (!tokens || (a.x != nullptr && a.topk_idx != nullptr && a.send_rows != nullptr));
}

}  // namespace
}  // namespace ncclscope::collectives

extern "C" ncclscope_moe_result ncclscope_moe_dispatch_on_cpu(
    const ncclscope_moe_dispatch_args* args) {
  namespace nc = ncclscope::collectives;
  if (args == nullptr || !nc::Plausible(*args)) return NCCLSCOPE_MOE_INVALID_ARGUMENT;
  const nc::MoeTwinCall c = nc::MoeTwinCallOf(args->common);
  const ncclscope_moe_config& cfg = c.plan->config;
  const nc::Dispatch d{
      *args, c, cfg.num_experts, cfg.top_k, c.plan->local_experts, c.plan->row_bytes};
  return nc::RunMoeBlocks(c, d, [&d](uint32_t b) { d.Finish(b); });
}
