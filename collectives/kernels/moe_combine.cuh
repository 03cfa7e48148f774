// The MoE combine kernel's steps (kernels/moe.cu, ncclscope_moe_combine), exact and rank sums,
// step for step as their twin, collectives/moe/moe_combine_twin.cpp. Included by moe.cu only.
#pragma once

#include <cstdint>

#include "collectives/include/ncclscope/moe.h"
#include "collectives/kernels/device_elements.cuh"
#include "collectives/kernels/moe_call.cuh"
#include "collectives/moe/moe_layout.h"

namespace ncclscope::collectives {
namespace {

// ---- combine (moe_combine_twin.cpp) ----

__shared__ int32_t rows_of[kMaxRanks];
__shared__ int32_t expert_rows;

// The expert rows this rank holds, from its dispatch's counts (thread 0; the block reads them).
__device__ int32_t ExpertRows(const ncclscope_moe_combine_args& a, const Call& c, MoeError* err) {
  if (threadIdx.x == 0) {
    int64_t rows = 0;
    bool ok = true;
    for (int32_t e = 0; e < c.plan.local_experts; ++e) {
      ok = ok && a.recv_counts[e] >= 0;
      rows += a.recv_counts[e];
    }
    if (!ok || rows > c.plan.config.recv_capacity) {
      Note(err, NCCLSCOPE_MOE_BAD_HANDLE, -1);
      rows = 0;
    }
    expert_rows = static_cast<int32_t>(rows);
  }
  __syncthreads();
  return expert_rows;
}

__device__ void CombineSource(const ncclscope_moe_combine_args& a, const Call& c, MoeError* err) {
  const int64_t row_bytes = c.plan.row_bytes;
  const int32_t rows = ExpertRows(a, c, err);
  int32_t lo, hi;
  TokenChunk(rows, c.blocks, blockIdx.x, &lo, &hi);
  CopyPacks(c.buffer(c.rank).rows() + lo * row_bytes,
            static_cast<const unsigned char*>(a.expert_out) + lo * row_bytes,
            (hi - lo) * row_bytes / static_cast<int64_t>(kPackBytes));
  if (blockIdx.x == 0 && threadIdx.x == 0) c.buffer(c.rank).header(c.epoch)->rows = rows;
}

// Thread 0 checks a token's entries in k order, as the twin does (the first error it notes).
__device__ void CheckToken(const ncclscope_moe_combine_args& a, const Call& c, int32_t t,
                           MoeError* err) {
  const int32_t top_k = c.plan.config.top_k, experts = c.plan.config.num_experts;
  for (int32_t k = 0; k < top_k; ++k) {
    const int64_t entry = int64_t{t} * top_k + k;
    if (BadEntry(a.topk_idx[entry], experts)) Note(err, NCCLSCOPE_MOE_BAD_EXPERT, t);
    const int32_t e = UsedExpert(a.topk_idx[entry], experts);
    if (e < 0) continue;
    const int32_t row = a.send_rows[entry];
    if (row < 0 || row >= rows_of[e / c.plan.local_experts]) {
      Note(err, NCCLSCOPE_MOE_BAD_HANDLE, t);
    }
  }
}

// Rounds a pack's float32 sums to the data type and stores them at `to`.
template <typename D>
__device__ void StorePack(const float* acc, uint4* to) {
  Pack o;
  auto* y = reinterpret_cast<typename D::T*>(o.bytes);
#pragma unroll
  for (int i = 0; i < D::kPerPack; ++i) y[i] = D::Store(acc[i]);
  *to = o.raw;
}

// ---- combine's rank sums (moe_combine_twin.cpp, CombineRankSums) ----

// Home side: the chunk's routing, rows and weights where the expert ranks read them; block 0
// publishes the expert rows this rank holds and its tokens.
__device__ void SumsSource(const ncclscope_moe_combine_args& a, const Call& c, MoeError* err) {
  const int32_t top_k = c.plan.config.top_k;
  const MoeBuffer& mine = c.buffer(c.rank);
  const int32_t rows = ExpertRows(a, c, err);
  const int32_t tokens = TokensOf(a.common, err);
  int32_t lo, hi;
  TokenChunk(tokens, c.blocks, blockIdx.x, &lo, &hi);
  for (int64_t j = int64_t{lo} * top_k + threadIdx.x; j < int64_t{hi} * top_k; j += blockDim.x) {
    mine.topk()[j] = a.topk_idx[j];
    mine.send_rows()[j] = a.send_rows[j];
    mine.weights()[j] = a.topk_weights[j];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    mine.header(c.epoch)->rows = rows;
    mine.header(c.epoch)->num_tokens = tokens;
  }
}

// Expert side, a warp per token of chunk b of every rank (rank + 1 first, itself last): lane k
// holds slot k; the slots here with a row this rank holds are summed in k order (fused
// multiply-adds from 0, rows read from expert_out where they are) and rounded to the data type
// into the registered rows at the row of the token's first slot here, when that slot's row is
// valid (else the token's rank reports the handle and no sum is written).
template <typename D>
__device__ void SumsMiddle(const ncclscope_moe_combine_args& a, const Call& c) {
  const int32_t top_k = c.plan.config.top_k, experts = c.plan.config.num_experts;
  const int32_t local = c.plan.local_experts, rows = expert_rows;
  const int64_t row_bytes = c.plan.row_bytes, packs = row_bytes / static_cast<int64_t>(kPackBytes);
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  const auto* expert_out = static_cast<const unsigned char*>(a.expert_out);
  unsigned char* sums = c.buffer(c.rank).rows();
  for (int j = 1; j <= c.nranks; ++j) {
    const MoeBuffer& from = c.buffer((c.rank + j) % c.nranks);
    int32_t lo, hi;
    TokenChunk(from.header(c.epoch)->num_tokens, c.blocks, blockIdx.x, &lo, &hi);
    for (int32_t t = lo + static_cast<int32_t>(warp); t < hi; t += static_cast<int32_t>(warps)) {
      const int64_t entry = int64_t{t} * top_k + lane;
      const int32_t e =
          lane < static_cast<uint32_t>(top_k) ? UsedExpert(from.topk()[entry], experts) : -1;
      const bool here = e >= 0 && e / local == c.rank;
      const int32_t row = here ? from.send_rows()[entry] : -1;
      const bool valid = here && row >= 0 && row < rows;
      const float w = valid ? from.weights()[entry] : 0.0f;
      const uint32_t here_mask = __ballot_sync(kFullWarp, here);
      const uint32_t valid_mask = __ballot_sync(kFullWarp, valid);
      if (here_mask == 0 || (valid_mask & (here_mask & (0u - here_mask))) == 0) continue;
      const int32_t first_row = __shfl_sync(kFullWarp, row, __ffs(here_mask) - 1);
      for (int64_t base = 0; base < packs; base += 32) {
        const int64_t pack = base + lane;
        float acc[D::kPerPack];
#pragma unroll
        for (int i = 0; i < D::kPerPack; ++i) acc[i] = 0.0f;
        for (uint32_t m = valid_mask; m != 0; m &= m - 1) {
          const int k = __ffs(m) - 1;
          const int32_t r = __shfl_sync(kFullWarp, row, k);
          const float wk = __shfl_sync(kFullWarp, w, k);
          if (pack >= packs) continue;
          Pack v;
          v.raw = reinterpret_cast<const uint4*>(expert_out + r * row_bytes)[pack];
          const auto* x = reinterpret_cast<const typename D::T*>(v.bytes);
#pragma unroll
          for (int i = 0; i < D::kPerPack; ++i) acc[i] = __fmaf_rn(wk, D::Load(x[i]), acc[i]);
        }
        if (pack >= packs) continue;
        StorePack<D>(acc, reinterpret_cast<uint4*>(sums + first_row * row_bytes) + pack);
      }
    }
  }
}

// One pack of token t's output, from the rows it reads on the expert ranks (checked against the
// rows each holds), in float32 from 0: exact, every used slot's weight x expert row as fused
// multiply-adds in k order; rank sums, the sum of each rank with a slot in the order of those
// ranks' first slots. Rounded once more into `out`.
template <typename D, bool kRankSums>
__device__ void TokenPack(const ncclscope_moe_combine_args& a, const Call& c, int32_t t,
                          int64_t pack) {
  const int32_t top_k = c.plan.config.top_k, experts = c.plan.config.num_experts;
  const int32_t local = c.plan.local_experts;
  const int64_t row_bytes = c.plan.row_bytes;
  const int32_t* topk = a.topk_idx + int64_t{t} * top_k;
  float acc[D::kPerPack];
#pragma unroll
  for (int i = 0; i < D::kPerPack; ++i) acc[i] = 0.0f;
  Pack v;
  const auto* x = reinterpret_cast<const typename D::T*>(v.bytes);
  for (int32_t k = 0; k < top_k; ++k) {
    const int32_t e = UsedExpert(topk[k], experts);
    if (e < 0 || (kRankSums && !FirstSlotOnItsRank(topk, k, experts, local))) continue;
    const int q = e / local;
    const int32_t row = a.send_rows[int64_t{t} * top_k + k];
    if (row < 0 || row >= rows_of[q]) continue;
    v.raw = reinterpret_cast<const uint4*>(c.buffer(q).rows() + row * row_bytes)[pack];
    if constexpr (kRankSums) {
#pragma unroll
      for (int i = 0; i < D::kPerPack; ++i) acc[i] += D::Load(x[i]);
    } else {
      const float w = a.topk_weights[int64_t{t} * top_k + k];
#pragma unroll
      for (int i = 0; i < D::kPerPack; ++i) acc[i] = __fmaf_rn(w, D::Load(x[i]), acc[i]);
    }
  }
  StorePack<D>(acc,
               reinterpret_cast<uint4*>(static_cast<unsigned char*>(a.out) + t * row_bytes) + pack);
}

// Token side, the last step of both modes: each token of the chunk checked by thread 0, its
// packs summed by the block's threads (TokenPack).
template <typename D, bool kRankSums>
__device__ void CombineReceive(const ncclscope_moe_combine_args& a, const Call& c, MoeError* err) {
  if (threadIdx.x < static_cast<uint32_t>(c.nranks)) {
    rows_of[threadIdx.x] = c.buffer(threadIdx.x).header(c.epoch)->rows;
  }
  __syncthreads();
  int32_t lo, hi;
  TokenChunk(TokensOf(a.common, err), c.blocks, blockIdx.x, &lo, &hi);
  const int64_t packs = c.plan.row_bytes / static_cast<int64_t>(kPackBytes);
  for (int32_t t = lo; t < hi; ++t) {
    if (threadIdx.x == 0) CheckToken(a, c, t, err);
    for (int64_t pack = threadIdx.x; pack < packs; pack += blockDim.x) {
      TokenPack<D, kRankSums>(a, c, t, pack);
    }
  }
}

// One combine for data type D, exact (moe_combine_twin.cpp, Combine) or by rank sums
// (CombineRankSums: a third step and barrier between the two).
template <typename D>
__device__ void CombineAs(const ncclscope_moe_combine_args& a, const Call& c) {
  const bool sums = c.plan.config.combine == NCCLSCOPE_MOE_COMBINE_RANK_SUMS;
  MoeError err{0, 0};  // thread 0's
  int peer = -1;
  if (sums) {
    SumsSource(a, c, &err);
  } else {
    CombineSource(a, c, &err);
  }
  PostGrid(c, Barrier::kStart);
  if (!WaitGrid(c, Barrier::kStart, &peer)) return TimedOut(c, peer);
  if (sums) {
    SumsMiddle<D>(a, c);
    PostGrid(c, Barrier::kMiddle);
    if (!WaitGrid(c, Barrier::kMiddle, &peer)) return TimedOut(c, peer);
    CombineReceive<D, true>(a, c, &err);
  } else {
    CombineReceive<D, false>(a, c, &err);
  }
  if (threadIdx.x == 0) c.buffer(c.rank).header(c.epoch)->error[blockIdx.x] = err;
  PostGrid(c, Barrier::kEnd);
  if (!WaitGrid(c, Barrier::kEnd, &peer)) return TimedOut(c, peer);
  Finish(c);
}

__device__ void Combine(const ncclscope_moe_combine_args& a) {
  if (!LaunchMatches(a.common)) return;
  const Call& c = CallOf(a.common);
  if (Stale(c)) return;
  switch (c.plan.config.dtype) {
    case NCCLSCOPE_MOE_FP16:
      return CombineAs<Fp16>(a, c);
    case NCCLSCOPE_MOE_BF16:
      return CombineAs<Bf16>(a, c);
    default:
      return CombineAs<Fp32>(a, c);
  }
}

}  // namespace
}  // namespace ncclscope::collectives
