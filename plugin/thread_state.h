// Per-thread state of the probe: cached thread id, re-entrancy guard, NCCL group nesting and the
// records of the open group that wait for a device completion event.
#pragma once

#include <cstdint>

#include <nccl.h>

namespace ncclscope::plugin {

// Records of one group that are waiting for their stream's event at the outermost GroupEnd. The
// array is fixed so that a call inside a group never allocates; overflow is counted as untracked.
inline constexpr uint32_t kMaxPendingInGroup = 512;

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
  PendingCompletion pending[kMaxPendingInGroup];
};

// The calling thread's state. Thread-safe by construction (thread-local).
ThreadState& Tls() noexcept;

// The calling thread's id, cached after the first call (one gettid system call per thread).
uint32_t CachedTid() noexcept;

// Forgets the cached id and open group of the calling thread; for the fork child handler.
void ResetThreadStateAfterFork() noexcept;

}  // namespace ncclscope::plugin
