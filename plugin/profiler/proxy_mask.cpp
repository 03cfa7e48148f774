#include "plugin/profiler/proxy_mask.h"

#include <atomic>
#include <cstring>

#include "plugin/core/profiler_abi.h"
#include "plugin/runtime/probe_record.h"
#include "trace/record.h"

namespace ncclscope::plugin::profiler {
namespace {

constexpr uint64_t kDetailBits = prof_abi::kProxyOp | prof_abi::kProxyStep;

std::atomic<int*> g_mask{nullptr};
std::atomic<uint8_t> g_mode{static_cast<uint8_t>(ProxyDetailMode::kSuspect)};
// The detail bits this probe set that were not set before (only these are ever cleared).
std::atomic<uint64_t> g_added_detail{0};
std::atomic<bool> g_detail_on{false};

void WriteMaskRecord(trace::RingWriter& ring, uint64_t mask, uint64_t why) noexcept {
  trace::RecordData d = ProbeRecord(trace::OpType::kProfilerMask, 0);
  d.aux = mask;
  d.count = why;
  ring.Append(d, false);
}

// ORs bits into NCCL's int; returns the bits that were not set before.
uint64_t OrBits(int* mask, uint64_t bits) noexcept {
  const int before = __atomic_fetch_or(mask, static_cast<int>(bits), __ATOMIC_RELAXED);
  return bits & ~static_cast<uint64_t>(static_cast<unsigned>(before));
}

}  // namespace

ProxyDetailMode ParseProxyDetailMode(const char* text) noexcept {
  if (text != nullptr && std::strcmp(text, "off") == 0) return ProxyDetailMode::kOff;
  if (text != nullptr && std::strcmp(text, "always") == 0) return ProxyDetailMode::kAlways;
  return ProxyDetailMode::kSuspect;
}

void AttachMask(int* mask, uint64_t wanted, ProxyDetailMode mode,
                trace::RingWriter& ring) noexcept {
  if (mask == nullptr) return;
  int* expected = nullptr;
  if (g_mask.compare_exchange_strong(expected, mask, std::memory_order_acq_rel)) {
    g_mode.store(static_cast<uint8_t>(mode), std::memory_order_relaxed);
  }
  uint64_t added = OrBits(mask, wanted);
  if (mode == ProxyDetailMode::kAlways) {
    const uint64_t detail = OrBits(mask, kDetailBits);
    g_added_detail.fetch_or(detail, std::memory_order_relaxed);
    g_detail_on.store(true, std::memory_order_relaxed);
    added |= detail;
  }
  if (added != 0) {
    WriteMaskRecord(ring, static_cast<unsigned>(__atomic_load_n(mask, __ATOMIC_RELAXED)),
                    trace::kMaskWhyStart);
  }
}

void SetProxyDetail(bool on, trace::RingWriter& ring) noexcept {
  int* mask = g_mask.load(std::memory_order_acquire);
  if (mask == nullptr ||
      g_mode.load(std::memory_order_relaxed) != static_cast<uint8_t>(ProxyDetailMode::kSuspect) ||
      g_detail_on.load(std::memory_order_relaxed) == on) {
    return;
  }
  g_detail_on.store(on, std::memory_order_relaxed);
  if (on) {
    g_added_detail.fetch_or(OrBits(mask, kDetailBits), std::memory_order_relaxed);
  } else {
    const uint64_t added = g_added_detail.exchange(0, std::memory_order_relaxed);
    __atomic_fetch_and(mask, ~static_cast<int>(added), __ATOMIC_RELAXED);
  }
  WriteMaskRecord(ring, static_cast<unsigned>(__atomic_load_n(mask, __ATOMIC_RELAXED)),
                  on ? trace::kMaskWhySuspect : trace::kMaskWhyResolved);
}

void ResetMaskForTest() noexcept {
  g_mask.store(nullptr, std::memory_order_relaxed);
  g_mode.store(static_cast<uint8_t>(ProxyDetailMode::kSuspect), std::memory_order_relaxed);
  g_added_detail.store(0, std::memory_order_relaxed);
  g_detail_on.store(false, std::memory_order_relaxed);
}

}  // namespace ncclscope::plugin::profiler
