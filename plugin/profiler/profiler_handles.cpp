// The pools of profiler_handles.h and when a handle may be reused.
#include "plugin/profiler/profiler_handles.h"

#include <new>

#include "plugin/profiler/profiler_plugin.h"

#include "trace/record.h"

namespace ncclscope::plugin::profiler {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

Context g_contexts[kMaxContexts];
std::atomic<uint32_t> g_next_context{0};
// Allocated at the first context, so a process whose NCCL never loads the profiler never pays for
// it; never freed.
std::atomic<Handle*> g_handles{nullptr};
std::atomic<uint64_t> g_next_handle{0};
std::atomic<uint64_t> g_busy_reused{0};

template <typename T>
T* InArray(T* base, size_t n, const void* p) noexcept {
  if (base == nullptr) return nullptr;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  const auto lo = reinterpret_cast<uintptr_t>(base);
  if (addr < lo || addr >= lo + n * sizeof(T) || (addr - lo) % sizeof(T) != 0) return nullptr;
  return base + (addr - lo) / sizeof(T);
}

// Whether events of a recorded operation may still come: it waits for its Coll/P2p event, or some
// of its kernel channels have not stopped (a part to the rank itself has none in NCCL 2.28.9),
// or, for an AlltoAll, Gather or Scatter, some of its parts' channels. Such a handle must not be
// reused: a late KernelCh event would land on the next operation, and the long one would never
// complete in the records (it would read as hung).
bool WholeBusy(const Handle& w) noexcept {
  return w.stage.load(std::memory_order_acquire) != kStageNumbered ||
         w.parts_launched.load(kRelaxed) < w.remote_parts.load(kRelaxed) ||
         w.stopped.load(kRelaxed) < w.channels.load(kRelaxed);
}

bool RecordedBusy(const Handle& h, const Context& c) noexcept {
  if (h.parts.load(kRelaxed) != 0) return WholeBusy(h);
  // A part: its events go to its call, and come while the call's do.
  if (const Handle* w = h.whole.load(std::memory_order_acquire)) return WholeBusy(*w);
  if (h.stage.load(kRelaxed) != kStageLaunched) return true;
  const auto op = static_cast<trace::OpType>(h.op.load(kRelaxed));
  if (trace::IsP2P(op) && h.peer.load(kRelaxed) == c.rank) return false;
  return h.stopped.load(kRelaxed) < h.channels.load(kRelaxed);
}

// Beside the interposer a handle is only needed while a kernel channel of its operation runs (a
// long kernel, whose KernelChStop must still find its own channel bits: the stall stage read from
// kernel_channels records would otherwise blame the wrong operation). By the time a slot comes
// round again the kernel of the operation it described has started: NCCL reports kernel starts
// through a 64-entry ring per channel.
bool KernelRunning(const Handle& h) noexcept {
  const uint64_t started = h.kernel_channels.started.load(std::memory_order_acquire);
  return (started & ~h.kernel_channels.stopped.load(std::memory_order_acquire)) != 0;
}

bool Busy(const Handle& h) noexcept {
  if (h.tag.load(std::memory_order_acquire) != (kHandleTag | kKindOp)) return false;
  const Context* c = h.ctx.load(kRelaxed);
  if (c == nullptr) return false;
  return c->records ? RecordedBusy(h, *c) : KernelRunning(h);
}

// Bounded: past this many busy handles in a row (hung operations), the next one is reused.
constexpr uint32_t kMaxHandleProbes = 16;

}  // namespace

Context* NewContext() noexcept {
  const uint32_t i = g_next_context.fetch_add(1, kRelaxed);
  return i < kMaxContexts ? &g_contexts[i] : nullptr;
}

Context* ContextOf(const void* context) noexcept {
  Context* c = InArray(g_contexts, kMaxContexts, context);
  return c != nullptr && c->live.load(std::memory_order_acquire) ? c : nullptr;
}

bool InContextPool(const void* p) noexcept {
  return InArray(g_contexts, kMaxContexts, p) != nullptr;
}

bool AnyContext() noexcept {
  return g_next_context.load(kRelaxed) != 0;
}

bool EnsureHandlePool() noexcept {
  if (g_handles.load(std::memory_order_acquire) != nullptr) return true;
  auto* pool = new (std::nothrow) Handle[kHandlePoolSize];
  if (pool == nullptr) return false;
  Handle* none = nullptr;
  // Another communicator's init may have won: its pool is the one events use.
  if (!g_handles.compare_exchange_strong(none, pool, std::memory_order_acq_rel)) delete[] pool;
  return true;
}

Handle* HandlePool() noexcept {
  return g_handles.load(std::memory_order_acquire);
}

Handle* HandleOf(const void* handle) noexcept {
  return InArray(g_handles.load(std::memory_order_acquire), kHandlePoolSize, handle);
}

Handle* HandleOfKind(const void* p, uint32_t kind) noexcept {
  Handle* h = HandleOf(p);
  return h != nullptr && h->tag.load(std::memory_order_acquire) == (kHandleTag | kind) ? h
                                                                                       : nullptr;
}

Handle* OperationHandle(const void* parent, const Context* c) noexcept {
  Handle* h = HandleOfKind(parent, kKindOp);
  if (h == nullptr || h->ctx.load(kRelaxed) != c ||
      h->stage.load(std::memory_order_acquire) != kStageLaunched) {
    return nullptr;
  }
  return h;
}

Handle* NewHandle(uint32_t kind, Context* c) noexcept {
  Handle* pool = g_handles.load(std::memory_order_acquire);
  Handle* h_ptr = nullptr;
  for (uint32_t k = 0; k < kMaxHandleProbes && h_ptr == nullptr; ++k) {
    // A fresh index per probe: two threads never look at the same handle (short of a whole
    // pool's worth of concurrent claims).
    Handle& probe = pool[g_next_handle.fetch_add(1, kRelaxed) & (kHandlePoolSize - 1)];
    if (!Busy(probe)) h_ptr = &probe;
  }
  if (h_ptr == nullptr) {
    h_ptr = &pool[g_next_handle.fetch_add(1, kRelaxed) & (kHandlePoolSize - 1)];
    g_busy_reused.fetch_add(1, kRelaxed);
  }
  Handle& h = *h_ptr;
  h.tag.store(0, kRelaxed);
  h.ctx.store(c, kRelaxed);
  h.group_id.store(0, kRelaxed);
  h.group_flags.store(0, kRelaxed);
  h.end_enter_ns.store(0, kRelaxed);
  h.stage.store(kStageApi, kRelaxed);
  h.op.store(0, kRelaxed);
  h.seq.store(0, kRelaxed);
  h.peer.store(-1, kRelaxed);
  h.nccl_seq.store(0, kRelaxed);
  h.tracked.store(false, kRelaxed);
  h.channels.store(1, kRelaxed);
  h.started.store(0, kRelaxed);
  h.stopped.store(0, kRelaxed);
  h.whole.store(nullptr, kRelaxed);
  h.parts.store(0, kRelaxed);
  h.remote_parts.store(0, kRelaxed);
  h.parts_joined.store(0, kRelaxed);
  h.parts_stopped.store(0, kRelaxed);
  h.parts_launched.store(0, kRelaxed);
  h.done.store(false, kRelaxed);
  h.kernel_channels.Reset();
  h.tag.store(kHandleTag | kind, std::memory_order_release);
  return &h;
}

uint64_t BusyReused() noexcept {
  return g_busy_reused.load(kRelaxed);
}

OperationIdentity IdentityOf(const Handle& h, const Context& c) noexcept {
  const Handle* w = h.whole.load(std::memory_order_acquire);
  const Handle& named = w != nullptr ? *w : h;
  return {c.comm_id, named.seq.load(kRelaxed), named.op.load(kRelaxed), h.peer.load(kRelaxed)};
}

}  // namespace ncclscope::plugin::profiler
