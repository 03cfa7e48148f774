// ncclscope's MoE dispatch and combine kernels for one node over peer memory (docs/collectives.md,
// "MoE dispatch/combine"; the C API in collectives/include/ncclscope/moe.h). Their CPU twins,
// collectives/moe/moe_dispatch_twin.cpp and moe_combine_twin.cpp, follow them step for step: the
// same token chunk per block, the same slots and counts (moe_layout.h), the same offsets, the same
// peer order, the same grid-wide barriers and epochs, the same per-call headers and errors, the
// same float32 fused multiply-adds in k order and the same rounding. Change one and the other
// together. What differs is only how a block's threads share a step (a warp numbers a chunk's
// entries, a warp scans the offsets, threads copy 16-byte packs), never what the step computes. The
// call's shared machinery is in moe_call.cuh, combine's steps (exact and rank sums) in
// moe_combine.cuh.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "collectives/include/ncclscope/moe.h"
#include "collectives/kernels/device_elements.cuh"
#include "collectives/kernels/moe_call.cuh"
#include "collectives/kernels/moe_combine.cuh"
#include "collectives/moe/moe_buffer.h"
#include "collectives/moe/moe_layout.h"

namespace ncclscope::collectives {
namespace {

// ---- dispatch (moe_dispatch_twin.cpp) ----

__shared__ int32_t per_expert[NCCLSCOPE_MOE_MAX_EXPERTS];  // counts, then each pair's rows
__shared__ int32_t offset[NCCLSCOPE_MOE_MAX_EXPERTS];
__shared__ int32_t dest[kMaxThreads];
__shared__ int64_t received;

// Warp 0 numbers the chunk's entries per expert in (token, k) order (moe_layout.h, AssignSlots),
// 32 entries at a time: lanes with the same expert are ranked by lane.
__device__ void AssignSlotsWarp(const int32_t* topk, int64_t first, int64_t last, int32_t experts,
                                int32_t top_k, int32_t* slot, MoeError* err) {
  const uint32_t lane = threadIdx.x;
  int32_t first_bad = -1;
  for (int64_t base = first; base < last; base += 32) {
    const int64_t j = base + lane;
    const bool in = j < last;
    const int32_t raw = in ? topk[j] : -1;
    const uint32_t bad = __ballot_sync(kFullWarp, in && BadEntry(raw, experts));
    if (bad != 0 && first_bad < 0)
      first_bad = static_cast<int32_t>((base + __ffs(bad) - 1) / top_k);
    const int32_t e = UsedExpert(raw, experts);
    const uint32_t same = __match_any_sync(kFullWarp, e);
    const int32_t before = __popc(same & ((1u << lane) - 1u));
    const int32_t s = e < 0 ? -1 : per_expert[e] + before;
    __syncwarp();
    if (e >= 0 && before == 0) per_expert[e] += __popc(same);
    __syncwarp();
    if (in) slot[j] = s;
  }
  if (lane == 0 && first_bad >= 0) Note(err, NCCLSCOPE_MOE_BAD_EXPERT, first_bad);
}

__device__ void DispatchSource(const ncclscope_moe_dispatch_args& a, const Call& c, MoeError* err) {
  const ncclscope_moe_plan& p = c.plan;
  const int32_t experts = p.config.num_experts, top_k = p.config.top_k;
  const MoeBuffer& mine = c.buffer(c.rank);
  const int32_t tokens = TokensOf(a.common, err);
  int32_t lo, hi;
  TokenChunk(tokens, c.blocks, blockIdx.x, &lo, &hi);
  const int64_t first = int64_t{lo} * top_k, last = int64_t{hi} * top_k;
  CopyPacks(mine.rows() + lo * p.row_bytes,
            static_cast<const unsigned char*>(a.x) + lo * p.row_bytes,
            (hi - lo) * p.row_bytes / static_cast<int64_t>(kPackBytes));
  for (int64_t j = first + threadIdx.x; j < last; j += blockDim.x) {
    mine.topk()[j] = a.topk_idx[j];
    mine.send_rows()[j] = -1;
  }
  for (int32_t e = threadIdx.x; e < experts; e += blockDim.x) per_expert[e] = 0;
  __syncthreads();
  if (threadIdx.x < 32) AssignSlotsWarp(a.topk_idx, first, last, experts, top_k, mine.slot(), err);
  __syncthreads();
  for (int32_t e = threadIdx.x; e < experts; e += blockDim.x) {
    mine.counts()[int64_t{e} * c.blocks + blockIdx.x] = per_expert[e];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) mine.header(c.epoch)->num_tokens = tokens;
}

// This rank's offsets for chunk b from every rank's counts (moe_layout.h, ReceiveOffsets): pair
// i = e_local * nranks + p. Threads sum the pairs' columns; warp 0 scans the pairs in order.
__device__ void ReceiveOffsetsBlock(const Call& c, int32_t* recv_counts) {
  const int32_t local = c.plan.local_experts;
  const int32_t pairs = local * c.nranks;
  for (int32_t i = threadIdx.x; i < pairs; i += blockDim.x) {
    const int p = i % c.nranks;
    const int32_t* column =
        c.buffer(p).counts() + (int64_t{c.rank} * local + i / c.nranks) * c.blocks;
    int32_t before = 0, total = 0;
    for (uint32_t b = 0; b < c.blocks; ++b) {
      if (b < blockIdx.x) before += column[b];
      total += column[b];
    }
    per_expert[i] = total;
    offset[i] = before;
  }
  __syncthreads();
  if (threadIdx.x < 32) {
    const int32_t lane = static_cast<int32_t>(threadIdx.x);
    const int32_t per_lane = (pairs + 31) / 32;
    const int32_t from = min(pairs, lane * per_lane), to = min(pairs, from + per_lane);
    int64_t sum = 0;
    for (int32_t i = from; i < to; ++i) sum += per_expert[i];
    int64_t inclusive = sum;
    for (int d = 1; d < 32; d <<= 1) {
      const int64_t v = __shfl_up_sync(kFullWarp, inclusive, d);
      if (lane >= d) inclusive += v;
    }
    int64_t rows = inclusive - sum;
    for (int32_t i = from; i < to; ++i) {
      offset[i] = static_cast<int32_t>(rows + offset[i]);
      rows += per_expert[i];
    }
    if (lane == 31) received = inclusive;
  }
  __syncthreads();
  if (blockIdx.x == 0) {
    for (int32_t e = threadIdx.x; e < local; e += blockDim.x) {
      int32_t n = 0;
      for (int p = 0; p < c.nranks; ++p) n += per_expert[e * c.nranks + p];
      recv_counts[e] = n;
    }
  }
}

__device__ void DispatchReceive(const ncclscope_moe_dispatch_args& a, const Call& c,
                                MoeError* err) {
  const ncclscope_moe_plan& p = c.plan;
  const int32_t top_k = p.config.top_k, local = p.local_experts;
  ReceiveOffsetsBlock(c, a.recv_counts);
  if (received > p.config.recv_capacity) {
    if (threadIdx.x == 0) Note(err, NCCLSCOPE_MOE_RECV_OVERFLOW, static_cast<int32_t>(received));
    return;
  }
  const int32_t own_first = c.rank * local;
  const int64_t packs_per_row = p.row_bytes / static_cast<int64_t>(kPackBytes);
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  auto* recv_x = static_cast<unsigned char*>(a.recv_x);
  for (int j = 1; j <= c.nranks; ++j) {
    const int peer = (c.rank + j) % c.nranks;  // rank+1 first, itself last
    const MoeBuffer& from = c.buffer(peer);
    int32_t lo, hi;
    TokenChunk(from.header(c.epoch)->num_tokens, c.blocks, blockIdx.x, &lo, &hi);
    const int64_t last = int64_t{hi} * top_k;
    // Rounds of one entry per thread: each thread places its entry, then warps copy the rows.
    for (int64_t base = int64_t{lo} * top_k; base < last; base += blockDim.x) {
      const int64_t entry = base + threadIdx.x;
      int32_t row = -1;
      if (entry < last) {
        const int32_t e = from.topk()[entry];
        if (e >= own_first && e < own_first + local) {
          row = offset[(e - own_first) * c.nranks + peer] + from.slot()[entry];
          a.recv_src[row] = ncclscope_moe_source{peer, static_cast<int32_t>(entry / top_k),
                                                 static_cast<int32_t>(entry % top_k)};
          from.send_rows()[entry] = row;
        }
      }
      dest[threadIdx.x] = row;
      __syncthreads();
      // A token's row crosses the link once per round however many of its slots come here: the
      // warp of its first such entry reads each pack once and writes it to every one of them
      // (DeepEP counts a token once per destination rank; top-8 over 8 ranks reaches 5.25 of
      // them on average, so per-entry reads would move 1.52x the bytes).
      const int64_t round_end = last < base + blockDim.x ? last - base : blockDim.x;
      for (uint32_t i = warp; i < round_end; i += warps) {
        if (dest[i] < 0) continue;
        const int64_t token = (base + i) / top_k;
        const int64_t token_begin = token * top_k - base > 0 ? token * top_k - base : 0;
        const int64_t token_end =
            (token + 1) * top_k - base < round_end ? (token + 1) * top_k - base : round_end;
        bool leader = true;
        for (int64_t j = token_begin; j < i && leader; ++j) leader = dest[j] < 0;
        if (!leader) continue;
        const auto* s = reinterpret_cast<const uint4*>(from.rows() + token * p.row_bytes);
        for (int64_t k = lane; k < packs_per_row; k += 32) {
          const uint4 pack = s[k];
          for (int64_t j = i; j < token_end; ++j) {
            if (dest[j] >= 0) reinterpret_cast<uint4*>(recv_x + dest[j] * p.row_bytes)[k] = pack;
          }
        }
      }
      __syncthreads();
    }
  }
}

__device__ void DispatchFinish(const ncclscope_moe_dispatch_args& a, const Call& c) {
  const int32_t top_k = c.plan.config.top_k;
  const MoeBuffer& mine = c.buffer(c.rank);
  int32_t lo, hi;
  TokenChunk(mine.header(c.epoch)->num_tokens, c.blocks, blockIdx.x, &lo, &hi);
  for (int64_t j = int64_t{lo} * top_k + threadIdx.x; j < int64_t{hi} * top_k; j += blockDim.x) {
    a.send_rows[j] = mine.send_rows()[j];
  }
}

__device__ void Dispatch(const ncclscope_moe_dispatch_args& a) {
  if (!LaunchMatches(a.common)) return;
  const Call& c = CallOf(a.common);
  if (Stale(c)) return;
  MoeError err{0, 0};  // thread 0's
  int peer = -1;
  DispatchSource(a, c, &err);
  PostGrid(c, Barrier::kStart);
  if (!WaitGrid(c, Barrier::kStart, &peer)) return TimedOut(c, peer);
  DispatchReceive(a, c, &err);
  if (threadIdx.x == 0) c.buffer(c.rank).header(c.epoch)->error[blockIdx.x] = err;
  PostGrid(c, Barrier::kEnd);
  if (!WaitGrid(c, Barrier::kEnd, &peer)) return TimedOut(c, peer);
  DispatchFinish(a, c);
  Finish(c);
}

}  // namespace
}  // namespace ncclscope::collectives

// The entry points (NCCLSCOPE_MOE_DISPATCH_KERNEL, NCCLSCOPE_MOE_COMBINE_KERNEL): plain C names the
// driver API finds with cuModuleGetFunction; one by-value parameter each.
extern "C" __global__ void __launch_bounds__(1024)
    ncclscope_moe_dispatch(ncclscope_moe_dispatch_args a) {
  ncclscope::collectives::Dispatch(a);
}

extern "C" __global__ void __launch_bounds__(1024)
    ncclscope_moe_combine(ncclscope_moe_combine_args a) {
  ncclscope::collectives::Combine(a);
}
