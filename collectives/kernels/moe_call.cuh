// What both MoE kernels (kernels/moe.cu) share: one call's state in shared memory, the check of
// the launch, the grid-wide barriers with their bounded waits and stall record, the call's status,
// and the block's copy of 16-byte packs. The twins' side is moe_twin_steps.h. Included by moe.cu
// only (one fatbin).
#pragma once

#include <cstdint>

#include "collectives/include/ncclscope/moe.h"
#include "collectives/kernels/device_steps.cuh"
#include "collectives/moe/moe_buffer.h"

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
  uint32_t expected_epoch;  // the one after the buffer's last call

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
    // NCCLSCOPE_MOE_DEVICE_EPOCH: the one after the last call's on this rank's buffer, which
    // block 0 writes only after every block of every rank has read it (the end barrier), or at a
    // timeout (moe_twin_steps.cpp, MoeTwinCallOf).
    call.expected_epoch = *static_cast<volatile uint32_t*>(call.buffer(a.rank).last_epoch()) + 1;
    call.epoch = a.flags == NCCLSCOPE_MOE_DEVICE_EPOCH ? call.expected_epoch : a.epoch;
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
                  cfg.num_experts <= NCCLSCOPE_MOE_MAX_EXPERTS && a.status != nullptr &&
                  (a.flags == 0 || a.flags == NCCLSCOPE_MOE_DEVICE_EPOCH);
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

// A call whose epoch is not the one after the buffer's last (a replay without
// NCCLSCOPE_MOE_DEVICE_EPOCH) touches nothing: block 0 writes the status, every block returns
// (moe_twin_steps.h, MoeCallStale). True when the call is stale.
__device__ bool Stale(const Call& c) {
  if (c.epoch == c.expected_epoch) return false;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *c.status = ncclscope_moe_status{NCCLSCOPE_MOE_STALE_EPOCH, c.rank,
                                     static_cast<int32_t>(c.expected_epoch)};
  }
  return true;
}

// A wait expired: block 0 writes the call's status and leaves its epoch in the buffer
// (moe_twin_steps.h, MoeCallTimedOut).
__device__ void TimedOut(const Call& c, int peer) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *c.status = ncclscope_moe_status{NCCLSCOPE_MOE_TIMEOUT, c.rank, peer};
    *c.buffer(c.rank).last_epoch() = c.epoch;
  }
}

// After the end barrier, block 0: the first error of any rank's block, and the call's epoch left
// in the buffer (moe_twin_steps.h, FinishMoeCall).
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
  *c.buffer(c.rank).last_epoch() = c.epoch;  // every block of every rank read it: the end barrier
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

}  // namespace
}  // namespace ncclscope::collectives
