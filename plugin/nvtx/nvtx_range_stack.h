// The NVTX ranges each application thread is inside: a bounded per-thread stack, filled by the
// NVTX injection's push/pop callbacks and read by the recorder to stamp a record with the training
// step and phase it belongs to (trace/record.h, "NVTX context").
#pragma once

#include <cstddef>
#include <cstdint>

#include "plugin/nvtx/nvtx_step_pattern.h"

namespace ncclscope::plugin {

// Frames kept per thread. Deeper pushes are counted (depth) but not stored; a record made below
// them names the deepest stored frame.
inline constexpr uint32_t kNvtxStackDepth = 24;
// Characters of a range name kept (longer names are cut); the same bound as a name record's.
inline constexpr size_t kNvtxNameChars = 47;
inline constexpr int32_t kNoFrame = -1;

struct NvtxFrame {
  char name[kNvtxNameChars + 1];  // NUL-terminated copy: the caller's string may be gone
  uint8_t len;
  uint8_t domain;      // NvtxDomainTable slot of the range's domain (0: the default domain)
  uint8_t ctx_cached;  // ctx_id is valid for a record made with this frame innermost
  uint8_t ctx_id;
  int32_t step_frame;  // index of the innermost step frame at or below this one, kNoFrame if none
  uint64_t step;       // that frame's step number
};

// Trivially constructible, like ThreadState: a `__thread` needs no constructor or exit hook.
struct NvtxThreadRanges {
  uint32_t depth;  // pushes minus pops of this thread (may exceed kNvtxStackDepth); NCCL's own
                   // "NCCL" domain is counted apart (nvtx_nccl_payload_calls.h)
  NvtxFrame frames[kNvtxStackDepth];
};

extern __thread NvtxThreadRanges t_nvtx_ranges __attribute__((visibility("hidden")));

// The calling thread's stack. The empty asm keeps the computed address in a register: otherwise
// the compiler recomputes it (a second __tls_get_addr call) after the first load.
inline NvtxThreadRanges& ThreadRanges() noexcept {
  NvtxThreadRanges* t = &t_nvtx_ranges;
  __asm__("" : "+r"(t));
  return *t;
}

// The pattern that tells step ranges (NCCLSCOPE_NVTX_STEP_PATTERN), set once at injection start
// before any callback is installed; read-only afterwards.
const StepPattern& ActiveStepPattern() noexcept;
void SetActiveStepPattern(const StepPattern& p) noexcept;

// Pushes a range named name[0..len) (bytes; cut at kNvtxNameChars) of domain slot `domain` on
// the calling thread. Returns the range's 0-based nesting level, as nvtxRangePush does. Hot path:
// no lock, no allocation, no system call.
int NvtxPush(NvtxThreadRanges& t, const char* name, size_t len, uint8_t domain) noexcept;

// Fills the step links of frame i once its name is in place. Hot path.
void LinkStep(NvtxThreadRanges& t, uint32_t i) noexcept;

// As NvtxPush for a NUL-terminated name, copied and measured in one pass. Hot path; inline, as
// it is all a plain nvtxRangePushA costs besides the step check.
inline int NvtxPushString(NvtxThreadRanges& t, const char* name, uint8_t domain) noexcept {
  const uint32_t level = t.depth++;
  if (level >= kNvtxStackDepth) return static_cast<int>(level);
  NvtxFrame& f = t.frames[level];
  size_t len = 0;
  if (name != nullptr) {
    for (; len < kNvtxNameChars && name[len] != '\0'; ++len) f.name[len] = name[len];
  }
  f.name[len] = '\0';
  f.len = static_cast<uint8_t>(len);
  f.domain = domain;
  LinkStep(t, level);
  return static_cast<int>(level);
}

// Pushes a wide-character name, narrowed (non-ASCII characters become '?'). Hot path.
int NvtxPushWide(NvtxThreadRanges& t, const wchar_t* name, uint8_t domain) noexcept;

// Ends the innermost range of `domain` on the calling thread (the top frame, or the innermost
// frame of that domain when domains interleave). Returns its level, -1 when none is open. Hot path.
int NvtxPopSlow(NvtxThreadRanges& t, uint8_t domain) noexcept;
inline int NvtxPop(NvtxThreadRanges& t, uint8_t domain) noexcept {
  if (t.depth == 0) return -1;
  const uint32_t level = t.depth - 1;
  if (__builtin_expect(level >= kNvtxStackDepth || t.frames[level].domain == domain, 1)) {
    t.depth = level;
    return static_cast<int>(level);
  }
  return NvtxPopSlow(t, domain);
}

// Which frames of t give a record's step, phase and innermost range: the innermost stored frame,
// the step frame at or below it, and the frame right above the step (the phase). kNoFrame where
// there is none. Thread-safe (reads only t).
struct NvtxWhere {
  int32_t top = kNoFrame;
  int32_t step = kNoFrame;
  int32_t phase = kNoFrame;
};
NvtxWhere LocateFrames(const NvtxThreadRanges& t) noexcept;

}  // namespace ncclscope::plugin
