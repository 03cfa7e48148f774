// The hot-path half of the CUPTI probe: while NCCL launches a call's kernels, the call is pushed
// as CUPTI's external correlation id, so each NCCL kernel CUPTI reports names the record of the
// call that launched it. Off (NCCLSCOPE_CUPTI unset, or CUPTI unusable) it costs one relaxed load
// and a predicted branch.
#pragma once

#include <cupti_activity.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "plugin/core/thread_state.h"
#include "plugin/runtime/call_frame.h"

namespace ncclscope::plugin {

// CUSTOM2: the PyTorch profiler (Kineto) uses CUSTOM0 and CUSTOM1.
inline constexpr CUpti_ExternalCorrelationKind kCuptiCorrelationKind =
    CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;

struct CuptiHooks {
  CUptiResult (*push)(CUpti_ExternalCorrelationKind kind, uint64_t id);
  CUptiResult (*pop)(CUpti_ExternalCorrelationKind kind, uint64_t* last_id);
};

// Set once CUPTI's activity is enabled; never reset (the hooks stay valid: libcupti is never
// closed).
extern std::atomic<const CuptiHooks*> g_cupti_hooks;

// The external id of the record of a call: its thread id (22 bits: Linux's pid_max is at most
// 2^22) and the low 42 bits of its entry time (73 minutes; a kernel is matched to records seconds
// old). The probe rebuilds it from the record's tid and t_enter_ns. Pure.
inline uint64_t CuptiKey(uint32_t tid, int64_t t_enter_ns) noexcept {
  constexpr uint64_t kTimeMask = (uint64_t{1} << 42) - 1;
  return (uint64_t{tid} & 0x3FFFFF) << 42 | (static_cast<uint64_t>(t_enter_ns) & kTimeMask);
}

// Calls forward() inside the call's correlation region when CUPTI is on. Keeps errno as forward()
// left it. Hot path.
template <typename Forward>
inline auto CorrelatedCall(const CallFrame& f, Forward&& forward) noexcept -> decltype(forward()) {
  const CuptiHooks* hooks = g_cupti_hooks.load(std::memory_order_relaxed);
  if (__builtin_expect(hooks == nullptr, 1)) return forward();
  int err = errno;
  hooks->push(kCuptiCorrelationKind, CuptiKey(CachedTid(*f.ts), f.t_enter));
  errno = err;
  auto r = forward();
  err = errno;
  hooks->pop(kCuptiCorrelationKind, nullptr);
  errno = err;
  return r;
}

}  // namespace ncclscope::plugin
