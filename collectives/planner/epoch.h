// The flags the AllReduce kernels synchronize with, in the memory every rank registers: per block,
// one slot per peer for each barrier of a call. Peer q passes barrier `k` of block b on rank r by
// writing the call's epoch into r's slot [b].k[q]; r waits until its slot holds that epoch or a
// later one. Epochs count calls and wrap: "later" is judged modulo 2^32 (EpochReached), which holds
// because no peer can be more than one call ahead (each call's last barrier waits for all).
// Separate slots per barrier keep a fast peer's next barrier from overwriting one not yet seen.
#pragma once

#include <cstdint>

#include "collectives/types/accel_types.h"

namespace ncclscope::collectives {

inline constexpr uint32_t kMaxBlocks = 64;

// kChunkReady and kSlotFree are the grouped send/recv exchange's per-pair flags
// (twins/exchange_twin.h): they count chunks, not calls.
enum class Barrier : uint8_t { kStart, kMiddle, kEnd, kChunkReady, kSlotFree };
const char* BarrierName(Barrier b) noexcept;

struct alignas(128) BlockFlags {
  uint32_t start[kMaxRanks];
  uint32_t middle[kMaxRanks];  // two-shot: between reduce-scatter and all-gather
  uint32_t end[kMaxRanks];
  // Exchange (twins/exchange_twin.h): [s] = the last chunk sender s made ready for this rank in
  // this block's share of the slot; [d] = the last chunk receiver d took from this rank's slot.
  uint32_t chunk_ready[kMaxRanks];
  uint32_t slot_free[kMaxRanks];
};

struct Signal {
  BlockFlags block[kMaxBlocks];
};

NCCLSCOPE_HOST_DEVICE inline uint32_t* FlagOf(Signal* s, uint32_t block, Barrier b, int peer) {
  BlockFlags& f = s->block[block];
  uint32_t* slots = b == Barrier::kStart        ? f.start
                    : b == Barrier::kMiddle     ? f.middle
                    : b == Barrier::kEnd        ? f.end
                    : b == Barrier::kChunkReady ? f.chunk_ready
                                                : f.slot_free;
  return &slots[peer];
}

// Whether a flag holding `seen` has reached epoch `want`, across the wrap of the counter.
NCCLSCOPE_HOST_DEVICE inline constexpr bool EpochReached(uint32_t seen, uint32_t want) {
  return static_cast<int32_t>(seen - want) >= 0;
}

}  // namespace ncclscope::collectives
