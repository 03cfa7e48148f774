// Which kernel channels of one operation started and stopped (KernelCh events), kept in the
// operation's handle (profiler_handles.h) and published by the background thread as
// kernel_channels records (proxy_progress.h).
#pragma once

#include <atomic>
#include <cstdint>

namespace ncclscope::plugin {

struct KernelChannelBits {
  // Bit c set once kernel channel c started (stopped). Written on NCCL's proxy thread, read by the
  // background thread.
  std::atomic<uint64_t> started{0};
  std::atomic<uint64_t> stopped{0};
  // Background thread only: what it last wrote of this operation (atomics: a recycled handle is
  // reset on the event path).
  std::atomic<uint64_t> published_started{0};
  std::atomic<uint64_t> published_stopped{0};
  std::atomic<uint32_t> ticks_seen{0};

  // For a handle starting a new operation. Event path: noexcept, relaxed stores.
  void Reset() noexcept {
    constexpr auto kRelaxed = std::memory_order_relaxed;
    started.store(0, kRelaxed);
    stopped.store(0, kRelaxed);
    published_started.store(0, kRelaxed);
    published_stopped.store(0, kRelaxed);
    ticks_seen.store(0, kRelaxed);
  }
};

}  // namespace ncclscope::plugin
