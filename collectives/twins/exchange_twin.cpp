#include "collectives/twins/exchange_twin.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "collectives/twins/twin_steps.h"

namespace ncclscope::collectives {
namespace {

// One block of one part: where it stands.
struct Unit {
  uint32_t part;
  uint32_t block;
  uint64_t chunks;     // of the part
  uint64_t done = 0;   // chunks moved
  bool freed = false;  // sender: the receiver freed the last chunk
};

uint32_t Load(const uint32_t* flag) {
  return std::atomic_ref<uint32_t>(*const_cast<uint32_t*>(flag)).load(std::memory_order_acquire);
}

// The bytes of chunk c that block b moves: [begin, begin + len) of the part, at `offset` in the
// slot.
struct Share {
  uint64_t begin;
  uint64_t len;
  uint64_t offset;
};

Share ShareOf(const ExchangeKernelArgs& a, const ExchangePartArgs& p, uint64_t c, uint32_t b) {
  const uint64_t begin = c * a.slot_bytes + b * a.sub_bytes;
  const uint64_t len = begin >= p.bytes ? 0 : std::min<uint64_t>(a.sub_bytes, p.bytes - begin);
  return {begin, len, b * a.sub_bytes};
}

// Moves unit u as far as it goes without waiting. True when it moved.
bool Advance(const ExchangeKernelArgs& a, Unit* u, Stall* waiting) {
  const ExchangePartArgs& p = a.part[u->part];
  const int me = a.rank;
  const int peer = p.peer;
  bool moved = false;
  if (p.send != 0) {
    const uint32_t* freed = FlagOf(a.signal[me], u->block, Barrier::kSlotFree, peer);
    while (u->done < u->chunks) {
      const uint32_t k = p.first_chunk + static_cast<uint32_t>(u->done) + 1;
      // This rank's slot for peer that chunk k uses; chunk k - 2 was its last.
      unsigned char* slot = a.staging[me] + ExchangeSlotOffset(peer, k, a.slot_bytes);
      const uint32_t want = k - kExchangeSlotsPerPeer;
      const uint32_t seen = Load(freed);
      if (!EpochReached(seen, want)) {
        *waiting = Stall{me, peer, u->block, Barrier::kSlotFree, want, seen};
        return moved;
      }
      const Share s = ShareOf(a, p, u->done, u->block);
      if (s.len > 0) std::memcpy(slot + s.offset, p.user + s.begin, s.len);
      PostEpoch(FlagOf(a.signal[peer], u->block, Barrier::kChunkReady, me), k);
      ++u->done;
      moved = true;
    }
    const uint32_t last = p.first_chunk + static_cast<uint32_t>(u->chunks);
    const uint32_t seen = Load(freed);
    if (!EpochReached(seen, last)) {
      *waiting = Stall{me, peer, u->block, Barrier::kSlotFree, last, seen};
      return moved;
    }
    u->freed = true;
    return true;
  }
  const uint32_t* ready = FlagOf(a.signal[me], u->block, Barrier::kChunkReady, peer);
  while (u->done < u->chunks) {
    const uint32_t k = p.first_chunk + static_cast<uint32_t>(u->done) + 1;
    const unsigned char* slot = a.staging[peer] + ExchangeSlotOffset(me, k, a.slot_bytes);
    const uint32_t seen = Load(ready);
    if (!EpochReached(seen, k)) {
      *waiting = Stall{me, peer, u->block, Barrier::kChunkReady, k, seen};
      return moved;
    }
    const Share s = ShareOf(a, p, u->done, u->block);
    if (s.len > 0) std::memcpy(p.user + s.begin, slot + s.offset, s.len);
    PostEpoch(FlagOf(a.signal[peer], u->block, Barrier::kSlotFree, me), k);
    ++u->done;
    moved = true;
  }
  u->freed = true;
  return true;
}

}  // namespace

bool RunExchangeTwin(const ExchangeKernelArgs& a, int64_t deadline_ns, Stall* stall) noexcept {
  if (!PlausibleLaunch(a.rank, a.nranks, a.nparts * a.blocks_per_part, 1) ||
      a.nparts > kMaxExchangeParts || a.slot_bytes == 0 || a.sub_bytes == 0 ||
      a.sub_bytes * a.blocks_per_part != a.slot_bytes) {
    return true;  // not a launch the planner makes: touch nothing
  }
  Unit units[kMaxExchangeParts * kMaxBlocks];
  uint32_t n = 0;
  for (uint32_t p = 0; p < a.nparts; ++p) {
    const ExchangePartArgs& part = a.part[p];
    if (part.peer < 0 || part.peer >= a.nranks) return true;
    const uint64_t chunks = (part.bytes + a.slot_bytes - 1) / a.slot_bytes;
    for (uint32_t b = 0; b < a.blocks_per_part; ++b) units[n++] = Unit{p, b, chunks};
  }
  for (uint32_t spins = 1;; ++spins) {
    bool all = true;
    bool moved = false;
    Stall waiting{};
    bool first_wait = true;
    for (uint32_t i = 0; i < n; ++i) {
      if (units[i].freed) continue;
      Stall w{};
      moved |= Advance(a, &units[i], &w);
      if (!units[i].freed) {
        all = false;
        if (first_wait) waiting = w;
        first_wait = false;
      }
    }
    if (all) return true;
    if (moved) continue;
    // Nothing could move: the peers are behind. Give them the core, as WaitForEpoch does.
    sched_yield();
    if (spins % kClockEvery == 0 && MonotonicNs() > deadline_ns) {
      *stall = waiting;
      return false;
    }
  }
}

}  // namespace ncclscope::collectives
