// The NVTX context of a record: the training step and an interned (phase, innermost range) pair,
// packed into RecordData::reserved, and the name records (OpType 96, 97) that let readers turn the
// interned id back into names. Layout: trace/record.h, "NVTX context".
#pragma once

#include <atomic>
#include <cstdint>

#include "plugin/nvtx/nvtx_range_stack.h"
#include "trace/record.h"
#include "trace/ring_writer.h"

namespace ncclscope::plugin {

// True once the NVTX injection installed its callbacks in some NVTX instance of the process.
extern std::atomic<bool> g_nvtx_recording __attribute__((visibility("hidden")));

// The reserved word of a record made now on the calling thread: its step and context (0 when the
// thread is inside no range). Appends the name records of a context the first time it is used,
// and again when the ring has moved on by half its capacity since (so the newest half of a ring
// always holds the names it uses). Hot path: no lock, no allocation, no system call; the first
// use of a context on a thread hashes and compares two short strings.
uint32_t NvtxContextWordSlow(trace::RingWriter& ring, NvtxThreadRanges& t) noexcept;

// As above, one predicted branch when NVTX is not injected or the thread is inside no range.
inline uint32_t NvtxContextWord(trace::RingWriter& ring) noexcept {
  if (__builtin_expect(!g_nvtx_recording.load(std::memory_order_relaxed), 1)) return 0;
  NvtxThreadRanges& t = t_nvtx_ranges;
  if (t.depth == 0) return 0;
  return NvtxContextWordSlow(ring, t);
}

// A step started with nvtxRangeStart (process-wide, not a thread's stack): counts for threads
// that are inside no step range of their own. SetRangeStep(step, id) starts it, ClearRangeStep(id)
// ends it when id is the range that started it. Thread-safe, lock-free.
void SetRangeStep(uint64_t step, uint64_t range_id) noexcept;
void ClearRangeStep(uint64_t range_id) noexcept;

}  // namespace ncclscope::plugin
