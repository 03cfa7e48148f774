// ncclscope's MoE dispatch and combine kernels for one node over peer memory (docs/collectives.md,
// "MoE dispatch/combine"; the C API in collectives/include/ncclscope/moe.h). Their CPU twins,
// collectives/moe_dispatch_twin.cpp and moe_combine_twin.cpp, follow them step for step: the same
// token chunk per block, the same slots and counts (moe_layout.h), the same offsets, the same peer
// order, the same grid-wide barriers and epochs, the same per-call headers and errors, the same
// float32 fused multiply-adds in k order and the same rounding. Change one and the other together.
// What differs is only how a block's threads share a step (a warp numbers a chunk's entries, a
// warp scans the offsets, threads copy 16-byte packs), never what the step computes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "collectives/include/ncclscope/moe.h"
#include "collectives/kernels/device_elements.cuh"
#include "collectives/kernels/device_steps.cuh"
#include "collectives/moe_buffer.h"
#include "collectives/moe_layout.h"

namespace ncclscope::collectives {
namespace {

constexpr uint32_t kFullWarp = 0xFFFFFFFFu;
constexpr int kMaxThreads = 1024;

// One call of one rank (moe_twin_steps.h, MoeTwinCall), in shared memory: the plan and the
// buffers are read by every step, and keeping them out of the by-value parameter's address space
// keeps the compiler from copying the whole parameter to the stack.
struct Call {
  ncclscope_moe_plan plan;
  unsigned char* base[kMaxRanks];
  ncclscope_moe_status* status;
  KernelStall* stall;
  uint64_t deadline;
  int rank;
  int nranks;
  uint32_t blocks;
  uint32_t epoch;

  __device__ MoeBuffer buffer(int q) const { return MoeBuffer{base[q], &plan}; }
  __device__ Signal* signal(int q) const { return buffer(q).signal(); }
};

__shared__ Call call;

// Thread 0 fills the block's Call; every wait of the block ends at the same deadline.
__device__ const Call& CallOf(const ncclscope_moe_common_args& a) {
  if (threadIdx.x == 0) {
    call.plan = a.plan;
#pragma unroll
    for (int q = 0; q < kMaxRanks; ++q) call.base[q] = static_cast<unsigned char*>(a.buffer[q]);
    call.status = a.status;
    call.stall = reinterpret_cast<KernelStall*>(a.stall);
    call.deadline = GlobalTimerNs() + a.timeout_ns;
    call.rank = a.rank;
    call.nranks = a.plan.config.nranks;
    call.blocks = static_cast<uint32_t>(a.plan.config.blocks);
    call.epoch = a.epoch;
  }
  __syncthreads();
  return call;
}

// A launch the plan did not make touches nothing but the status.
__device__ bool LaunchMatches(const ncclscope_moe_common_args& a) {
  const ncclscope_moe_config& cfg = a.plan.config;
  const bool ok = gridDim.x == static_cast<uint32_t>(cfg.blocks) &&
                  blockDim.x == static_cast<uint32_t>(cfg.threads) && cfg.nranks >= 2 &&
                  cfg.nranks <= kMaxRanks && a.rank >= 0 && a.rank < cfg.nranks &&
                  cfg.num_experts <= NCCLSCOPE_MOE_MAX_EXPERTS && a.status != nullptr;
  if (!ok && blockIdx.x == 0 && threadIdx.x == 0 && a.status != nullptr) {
    *a.status = ncclscope_moe_status{NCCLSCOPE_MOE_INVALID_ARGUMENT, a.rank, 0};
  }
  return ok;
}

// The first error of the block, kept by thread 0 (moe_twin_steps.h, NoteError).
__device__ void Note(MoeError* e, int32_t code, int32_t detail) {
  if (e->code == 0) *e = MoeError{code, detail};
}

// Block b's side of a grid-wide barrier (moe_twin_steps.h): after the block's writes, post the
// epoch to every rank...
__device__ void PostGrid(const Call& c, Barrier which) {
  __syncthreads();
  const int q = static_cast<int>(threadIdx.x);
  if (q < c.nranks) StoreRelease(FlagOf(c.signal(q), blockIdx.x, which, c.rank), c.epoch);
}

// ...and wait until every block of every rank has posted it; threads wait for (block, rank) slots
// in parallel. On expiry the first expired slot in (block, rank) order is the one reported, as the
// twin (which waits in that order) reports it; *peer gets its rank.
__device__ bool WaitGrid(const Call& c, Barrier which, int* peer) {
  __shared__ uint32_t first_expired;
  if (threadIdx.x == 0) first_expired = UINT32_MAX;
  __syncthreads();
  const uint32_t slots = c.blocks * static_cast<uint32_t>(c.nranks);
  for (uint32_t i = threadIdx.x; i < slots; i += blockDim.x) {
    const uint32_t* flag = FlagOf(c.signal(c.rank), i / c.nranks, which, i % c.nranks);
    while (!EpochReached(LoadAcquire(flag), c.epoch)) {
      if (GlobalTimerNs() > c.deadline) {
        atomicMin(&first_expired, i);
        break;
      }
    }
  }
  __syncthreads();
  if (first_expired == UINT32_MAX) return true;
  const uint32_t block = first_expired / c.nranks;
  *peer = static_cast<int>(first_expired % c.nranks);
  if (threadIdx.x == 0 && c.stall != nullptr && atomicCAS(&c.stall->code, 0, 1) == 0) {
    c.stall->rank = c.rank;
    c.stall->peer = *peer;
    c.stall->block = block;
    c.stall->barrier = static_cast<uint32_t>(which);
    c.stall->want = c.epoch;
    c.stall->seen = LoadAcquire(FlagOf(c.signal(c.rank), block, which, *peer));
    __threadfence_system();
  }
  return false;
}

// A wait expired: block 0 writes the call's status (moe_twin_steps.h, MoeCallTimedOut).
__device__ void TimedOut(const Call& c, int peer) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *c.status = ncclscope_moe_status{NCCLSCOPE_MOE_TIMEOUT, c.rank, peer};
  }
}

// After the end barrier, block 0: the first error of any rank's block (moe_twin_steps.h,
// FinishMoeCall).
__device__ void Finish(const Call& c) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  ncclscope_moe_status s{NCCLSCOPE_MOE_OK, -1, 0};
  for (int q = 0; q < c.nranks && s.code == NCCLSCOPE_MOE_OK; ++q) {
    const MoeCallHeader* h = c.buffer(q).header(c.epoch);
    for (uint32_t b = 0; b < c.blocks; ++b) {
      if (h->error[b].code != 0) {
        s = ncclscope_moe_status{h->error[b].code, q, h->error[b].detail};
        break;
      }
    }
  }
  *c.status = s;
}

// Copies `packs` 16-byte packs with the block's threads.
__device__ void CopyPacks(unsigned char* to, const unsigned char* from, int64_t packs) {
  auto* d = reinterpret_cast<uint4*>(to);
  const auto* s = reinterpret_cast<const uint4*>(from);
  for (int64_t i = threadIdx.x; i < packs; i += blockDim.x) d[i] = s[i];
}

__device__ int32_t TokensOf(const ncclscope_moe_common_args& a, MoeError* err) {
  const int32_t t = a.num_tokens;
  if (t >= 0 && t <= a.plan.config.max_tokens) return t;
  if (threadIdx.x == 0) Note(err, NCCLSCOPE_MOE_TOO_MANY_TOKENS, t);
  return 0;
}

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

// One pack of token t's output: sum over k of weight x expert row, fused multiply-adds in k order
// from 0 in float32, rounded once.
template <typename D>
__device__ void CombinePack(const ncclscope_moe_combine_args& a, const Call& c, int32_t t,
                            int64_t pack) {
  const int32_t top_k = c.plan.config.top_k, experts = c.plan.config.num_experts;
  const int64_t row_bytes = c.plan.row_bytes;
  float acc[D::kPerPack];
#pragma unroll
  for (int i = 0; i < D::kPerPack; ++i) acc[i] = 0.0f;
  Pack v;
  const auto* x = reinterpret_cast<const typename D::T*>(v.bytes);
  for (int32_t k = 0; k < top_k; ++k) {
    const int64_t entry = int64_t{t} * top_k + k;
    const int32_t e = UsedExpert(a.topk_idx[entry], experts);
    if (e < 0) continue;
    const int q = e / c.plan.local_experts;
    const int32_t row = a.send_rows[entry];
    if (row < 0 || row >= rows_of[q]) continue;
    const float w = a.topk_weights[entry];
    v.raw = reinterpret_cast<const uint4*>(c.buffer(q).rows() + row * row_bytes)[pack];
#pragma unroll
    for (int i = 0; i < D::kPerPack; ++i) acc[i] = __fmaf_rn(w, D::Load(x[i]), acc[i]);
  }
  Pack o;
  auto* y = reinterpret_cast<typename D::T*>(o.bytes);
#pragma unroll
  for (int i = 0; i < D::kPerPack; ++i) y[i] = D::Store(acc[i]);
  reinterpret_cast<uint4*>(static_cast<unsigned char*>(a.out) + t * row_bytes)[pack] = o.raw;
}

template <typename D>
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
    for (int64_t pack = threadIdx.x; pack < packs; pack += blockDim.x)
      CombinePack<D>(a, c, t, pack);
  }
}

__device__ void Combine(const ncclscope_moe_combine_args& a) {
  if (!LaunchMatches(a.common)) return;
  const Call& c = CallOf(a.common);
  MoeError err{0, 0};  // thread 0's
  int peer = -1;
  CombineSource(a, c, &err);
  PostGrid(c, Barrier::kStart);
  if (!WaitGrid(c, Barrier::kStart, &peer)) return TimedOut(c, peer);
  switch (c.plan.config.dtype) {
    case NCCLSCOPE_MOE_FP16:
      CombineReceive<Fp16>(a, c, &err);
      break;
    case NCCLSCOPE_MOE_BF16:
      CombineReceive<Bf16>(a, c, &err);
      break;
    default:
      CombineReceive<Fp32>(a, c, &err);
      break;
  }
  if (threadIdx.x == 0) c.buffer(c.rank).header(c.epoch)->error[blockIdx.x] = err;
  PostGrid(c, Barrier::kEnd);
  if (!WaitGrid(c, Barrier::kEnd, &peer)) return TimedOut(c, peer);
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
