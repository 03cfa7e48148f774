#include "collectives/twins/bounded_wait.h"

#include <sched.h>
#include <time.h>

#include <atomic>
#include <cstdio>

namespace ncclscope::collectives {
namespace {
constexpr uint32_t kSpinsBeforeYield = 64;
}  // namespace

const char* BarrierName(Barrier b) noexcept {
  switch (b) {
    case Barrier::kStart:
      return "start";
    case Barrier::kMiddle:
      return "middle";
    case Barrier::kEnd:
      return "end";
    case Barrier::kChunkReady:
      return "chunk-ready";
    case Barrier::kSlotFree:
      return "slot-free";
  }
  return "?";
}

int64_t MonotonicNs() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

bool WaitForEpoch(const uint32_t* flag, uint32_t want, int64_t deadline_ns, Stall* stall) noexcept {
  // The flag lives in memory another rank writes: an atomic view of it, as the kernels' ld.acquire.
  std::atomic_ref<uint32_t> f(*const_cast<uint32_t*>(flag));
  for (uint32_t spins = 1;; ++spins) {
    const uint32_t seen = f.load(std::memory_order_acquire);
    if (EpochReached(seen, want)) return true;
    // The CPU twin's ranks may outnumber the cores (8 ranks on a 2-core CI machine): after a short
    // spin, give the core to the rank being waited for.
    if (spins > kSpinsBeforeYield) sched_yield();
    if (spins % kClockEvery == 0 && MonotonicNs() > deadline_ns) {
      stall->want = want;
      stall->seen = seen;
      return false;
    }
  }
}

void PostEpoch(uint32_t* flag, uint32_t epoch) noexcept {
  std::atomic_ref<uint32_t>(*flag).store(epoch, std::memory_order_release);
}

void DescribeStall(const Stall& s, char* out, unsigned long cap) noexcept {
  std::snprintf(out, cap,
                "rank %d waited for rank %d at the %s barrier of block %u (epoch %u, flag %u)",
                s.rank, s.peer, BarrierName(s.barrier), s.block, s.want, s.seen);
}

}  // namespace ncclscope::collectives
