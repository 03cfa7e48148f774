#include "plugin/nvtx/nvtx_contexts.h"

#include <cstring>

#include "plugin/core/probe_clock.h"
#include "plugin/core/thread_state.h"

namespace ncclscope::plugin {

std::atomic<bool> g_nvtx_recording{false};

namespace {

enum EntryState : uint32_t { kEmpty = 0, kFilling = 1, kReady = 2 };

// One interned (phase, innermost) pair; its id is its index. Entries are only ever added.
struct ContextEntry {
  std::atomic<uint32_t> state{kEmpty};
  uint32_t hash = 0;
  char phase[kNvtxNameChars + 1] = {};
  char inner[kNvtxNameChars + 1] = {};
  // Ring and write position right after this entry's name records were last appended.
  std::atomic<const trace::RingWriter*> emitted_ring{nullptr};
  std::atomic<uint64_t> emitted_pos{0};
};

ContextEntry g_contexts[trace::kNvtxContextFull];  // index 0 unused: id 0 means "no context"
// Step of an nvtxRangeStart step range plus one (0: none), and that range's id.
std::atomic<uint64_t> g_range_step{0};
std::atomic<uint64_t> g_range_step_id{0};

uint32_t HashNames(const char* a, const char* b) noexcept {
  uint32_t h = 2166136261u;  // FNV-1a over both names and the separator
  for (const char* p = a; *p != '\0'; ++p) h = (h ^ static_cast<uint8_t>(*p)) * 16777619u;
  h = (h ^ 0xffu) * 16777619u;
  for (const char* p = b; *p != '\0'; ++p) h = (h ^ static_cast<uint8_t>(*p)) * 16777619u;
  return h;
}

// Appends one name record: the name in the words from group_id to recv_buffer.
void AppendName(trace::RingWriter& ring, trace::OpType op, uint32_t id, const char* name) noexcept {
  trace::RecordData d{};
  d.op = static_cast<uint32_t>(op);
  d.seq = id;
  d.t_enter_ns = d.t_exit_ns = ProbeNowNs();
  d.t_device_done_ns = trace::kDoneUntracked;
  d.dtype = d.redop = d.peer = -1;
  d.tid = CachedTid(Tls());
  static_assert(trace::kNvtxNameBytes == kNvtxNameChars + 1, "name record holds a frame's name");
  std::memcpy(reinterpret_cast<char*>(&d.group_id), name, trace::kNvtxNameBytes);
  ring.Append(d, false);
}

void EmitNames(trace::RingWriter& ring, uint32_t id, ContextEntry& e) noexcept {
  AppendName(ring, trace::OpType::kNvtxPhaseName, id, e.phase);
  AppendName(ring, trace::OpType::kNvtxRangeName, id, e.inner);
  e.emitted_ring.store(&ring, std::memory_order_relaxed);
  e.emitted_pos.store(ring.header().write_pos.load(std::memory_order_relaxed),
                      std::memory_order_relaxed);
}

// Appends the entry's names again when this ring never got them (a forked child's new ring) or
// has moved on by half its capacity since they were appended.
void RefreshNames(trace::RingWriter& ring, uint32_t id) noexcept {
  ContextEntry& e = g_contexts[id];
  const uint64_t pos = ring.header().write_pos.load(std::memory_order_relaxed);
  const uint64_t at = e.emitted_pos.load(std::memory_order_relaxed);
  if (e.emitted_ring.load(std::memory_order_relaxed) == &ring && pos >= at &&
      pos - at < ring.capacity() / 2) {
    return;
  }
  EmitNames(ring, id, e);  // two threads may both append them: a duplicate is harmless
}

// The id of (phase, inner), interning it when new; kNvtxContextFull when the table is full.
uint32_t Intern(trace::RingWriter& ring, const char* phase, const char* inner) noexcept {
  const uint32_t hash = HashNames(phase, inner);
  constexpr uint32_t kSlots = trace::kNvtxContextFull - 1;  // ids 1..254
  for (uint32_t tries = 0; tries < kSlots; ++tries) {
    const uint32_t id = 1 + (hash + tries) % kSlots;
    ContextEntry& e = g_contexts[id];
    uint32_t state = e.state.load(std::memory_order_acquire);
    if (state == kEmpty) {
      if (!e.state.compare_exchange_strong(state, kFilling, std::memory_order_acquire)) {
        if (state == kFilling) continue;  // being filled by another thread: never wait on it
      } else {
        e.hash = hash;
        std::strncpy(e.phase, phase, kNvtxNameChars);
        std::strncpy(e.inner, inner, kNvtxNameChars);
        e.state.store(kReady, std::memory_order_release);
        EmitNames(ring, id, e);
        return id;
      }
    }
    if (state == kFilling) continue;  // a duplicate id for the same names is harmless
    if (e.hash == hash && std::strcmp(e.phase, phase) == 0 && std::strcmp(e.inner, inner) == 0) {
      RefreshNames(ring, id);
      return id;
    }
  }
  return trace::kNvtxContextFull;  // readers show its calls' phase as unknown
}

}  // namespace

uint32_t NvtxContextWordSlow(trace::RingWriter& ring, NvtxThreadRanges& t) noexcept {
  const NvtxWhere w = LocateFrames(t);
  NvtxFrame& top = t.frames[w.top];
  uint64_t step_field = 0;
  if (w.step != kNoFrame) {
    step_field = trace::NvtxStepField(top.step);
  } else {
    const uint64_t range_step = g_range_step.load(std::memory_order_relaxed);
    if (range_step != 0) step_field = trace::NvtxStepField(range_step - 1);
  }
  uint32_t ctx = 0;
  if (top.ctx_cached != 0) {
    ctx = top.ctx_id;
    if (ctx != 0 && ctx != trace::kNvtxContextFull) RefreshNames(ring, ctx);
  } else {
    // Below a step: the phase is the frame right above it. Without one, there is no phase and
    // the innermost range alone is kept. The step range itself is no context of its own.
    const char* phase = w.phase != kNoFrame ? t.frames[w.phase].name : "";
    const char* inner = w.top != w.step ? top.name : "";
    ctx = phase[0] == '\0' && inner[0] == '\0' ? 0 : Intern(ring, phase, inner);
    top.ctx_id = static_cast<uint8_t>(ctx);
    top.ctx_cached = 1;
  }
  return trace::NvtxReservedWord(step_field, ctx);
}

void SetRangeStep(uint64_t step, uint64_t range_id) noexcept {
  g_range_step_id.store(range_id, std::memory_order_relaxed);
  g_range_step.store(step + 1, std::memory_order_relaxed);
}

void ClearRangeStep(uint64_t range_id) noexcept {
  if (g_range_step_id.load(std::memory_order_relaxed) == range_id) {
    g_range_step.store(0, std::memory_order_relaxed);
  }
}

}  // namespace ncclscope::plugin
