// NCCL groups as the probe sees them: nesting per thread (like NCCL's own), a process-wide id for
// each outermost group, and the device completion of the calls a group launches at its end.
#pragma once

#include <cstdint>

#include <nccl.h>

#include "plugin/core/thread_state.h"
#include "plugin/runtime/completion_tracker.h"

namespace ncclscope::plugin {

// After a successful ncclGroupStart: enters one level; the outermost level gets a new group id.
// Returns the id of the open group. Thread-safe (per-thread state, one atomic).
uint64_t OnGroupStart(ThreadState& ts) noexcept;

// Remembers a record (already appended with a pending completion) until the outermost group end.
// Returns false when the fixed per-thread list is full (the caller records it untracked).
bool AddPending(ThreadState& ts, uint64_t slot, cudaStream_t stream) noexcept;

// After ncclGroupEnd / ncclGroupSimulateEnd: leaves one level. At the outermost level, when the
// group launched its work (launched: GroupEnd returned ncclSuccess), records one event per stream
// used in the group and hands its records to the tracker; otherwise no device work will complete
// for them and they are abandoned. Returns the id of the group that was open (0 if none).
// tracker may be null only when nothing is pending. Thread-safe (per-thread state).
uint64_t OnGroupEnd(ThreadState& ts, CompletionTracker* tracker, bool launched) noexcept;

}  // namespace ncclscope::plugin
