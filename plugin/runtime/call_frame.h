// The frame every intercepted entry point runs in: decides whether to record, guards against
// re-entry, keeps errno exactly as the application would see it without us.
#pragma once

#include <cerrno>
#include <cstdint>

#include "plugin/core/probe_clock.h"
#include "plugin/core/thread_state.h"
#include "plugin/runtime/runtime.h"

namespace ncclscope::plugin {

struct CallFrame {
  Runtime* rt = nullptr;
  ThreadState* ts = nullptr;
  int64_t t_enter = 0;
};

// Starts recording one call. Returns false when the call must pass straight through: recording is
// off (one predicted branch), or the call comes from inside our own code or from the NCCL call we
// are forwarding. Initializes the runtime at the first call. Keeps errno. Thread-safe.
inline bool BeginCall(CallFrame* f) noexcept {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (__builtin_expect(rt == kRuntimeOff, 0)) return false;
  ThreadState* tsp = &Tls();
  // Keeps the computed address in a register: otherwise the compiler recomputes it (a second TLS
  // lookup) rather than keep it across the cold InitRuntimeSlow call.
  __asm__("" : "+r"(tsp));
  ThreadState& ts = *tsp;
  if (ts.in_probe != 0) return false;
  ts.in_probe = 1;
  // InitRuntimeSlow keeps errno itself, and reading the clock cannot fail, so errno needs no save
  // here: what the application sees is what the real call leaves (see EndCall).
  if (__builtin_expect(rt == nullptr, 0)) {
    rt = InitRuntimeSlow();
    if (rt == nullptr) {
      ts.in_probe = 0;
      return false;
    }
  }
  f->rt = rt;
  f->ts = &ts;
  f->t_enter = ProbeNowNs();
  return true;
}

// Ends a recorded call: drops the guard and restores the errno the real function left. Call with
// the errno read right after the real call returned.
inline void EndCall(CallFrame* f, int errno_after_call) noexcept {
  f->ts->in_probe = 0;
  errno = errno_after_call;
}

}  // namespace ncclscope::plugin
