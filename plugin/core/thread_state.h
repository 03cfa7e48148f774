// Per-thread state of the probe: cached thread id, re-entrancy guard, NCCL group nesting and the
// records of the open group that wait for a device completion event.
#pragma once

#include <cstdint>

#include <nccl.h>

namespace ncclscope::plugin {

// Records of one group that are waiting for their stream's event at the outermost GroupEnd. The
// array is fixed so that a call inside a group never allocates; overflow is counted as untracked.
inline constexpr uint32_t kMaxPendingInGroup = 512;
// NCCLSCOPE_NUMERICS: sampled collectives of one open group whose output hash waits for the
// outermost GroupEnd (NCCL runs a group's work there); more are counted as skipped.
inline constexpr uint32_t kMaxNumericsInGroup = 64;

struct PendingCompletion {
  uint64_t slot;        // ring slot of the record
  cudaStream_t stream;  // stream the call was issued on
};

// Trivially constructible so that thread_local needs no constructor or exit hook (no allocation).
struct ThreadState {
  uint32_t tid;          // Linux thread id, 0 until first used
  uint32_t in_probe;     // non-zero while our code (or the real call we forward) runs
  uint32_t group_depth;  // NCCL group nesting as seen by ncclGroupStart/End
  uint32_t pending_count;
  uint64_t group_id;  // id of the open outermost group, 0 outside groups
  // The interposed operation whose real NCCL call runs now (trace::OpType, 0 none) and its peer
  // (send/recv) or -1: the profiler plugin's P2pApi/P2p events, which NCCL emits inside that call
  // on this thread, learn from them which operation (and which per-peer counter) they belong to.
  uint32_t call_op;
  int32_t call_peer;
  // NCCLSCOPE_ACCEL: the communicator (CommState) whose sends and receives this thread's open
  // group holds back for ncclscope's exchange (accel_group.h); null when none.
  void* held_comm;
  uint32_t numerics_deferred_count;
  uint16_t numerics_deferred[kMaxNumericsInGroup];  // NumericsProbe slot indexes
  PendingCompletion pending[kMaxPendingInGroup];
};

// The state of every thread; use Tls(). `__thread` rather than thread_local: the type is trivial,
// so no TLS wrapper call is needed, and hidden visibility lets the compiler use the module-local
// TLS access (a TLS descriptor with -mtls-dialect=gnu2). Initial-exec TLS is avoided on purpose:
// NCCL dlopens profiler plugins, and a dlopen'ed library may find no static TLS space left.
extern __thread ThreadState t_thread_state __attribute__((visibility("hidden")));

// The calling thread's state. Thread-safe by construction (thread-local). Hot path: fetch it once
// per call and pass the reference on, each access costs a TLS address computation.
inline ThreadState& Tls() noexcept {
  return t_thread_state;
}

// Reads the calling thread's id into ts.tid (one gettid system call per thread) and returns it.
// Out of line: it runs once per thread.
uint32_t CacheTidSlow(ThreadState& ts) noexcept;

// The id of the thread that owns ts (the calling thread), cached after its first use.
inline uint32_t CachedTid(ThreadState& ts) noexcept {
  const uint32_t tid = ts.tid;
  return __builtin_expect(tid != 0, 1) ? tid : CacheTidSlow(ts);
}

// Forgets the cached id and open group of the calling thread; for the fork child handler.
void ResetThreadStateAfterFork() noexcept;

}  // namespace ncclscope::plugin
