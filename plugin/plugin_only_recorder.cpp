// Plugin-only recording, the cold part: which side records a communicator, the runtime's
// creation, the communicator's table entry and creation record, and the pools.
#include "plugin/plugin_only_recorder.h"

#include <cinttypes>
#include <cstdio>
#include <new>
#include <string>

#include "plugin/comm_registry.h"
#include "plugin/plugin_only_state.h"
#include "plugin/probe_clock.h"
#include "plugin/probe_record.h"
#include "plugin/profiler_identity.h"
#include "plugin/proxy_mask.h"
#include "plugin/runtime.h"
#include "plugin/thread_state.h"
#include "plugin/warn.h"
#include "trace/ring_layout.h"

namespace ncclscope::plugin::plugin_only {
namespace {

Comm g_comms[kMaxComms];
std::atomic<uint32_t> g_next_comm{0};
// Allocated at the first communicator this recorder takes, so a process recorded by the
// interposer never pays for it; never freed.
std::atomic<Handle*> g_handles{nullptr};
std::atomic<uint64_t> g_next_handle{0};
Counters g_counters;
std::atomic<bool> g_warned_full{false};

template <typename T>
T* InArray(T* base, size_t n, const void* p) noexcept {
  if (base == nullptr) return nullptr;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  const auto lo = reinterpret_cast<uintptr_t>(base);
  if (addr < lo || addr >= lo + n * sizeof(T) || (addr - lo) % sizeof(T) != 0) return nullptr;
  return base + (addr - lo) / sizeof(T);
}

std::string DefaultName(uint64_t id) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "comm-%016" PRIx64, id);
  return buf;
}

// The communicator's comm table entry, as the interposer's creation publishes it. Its handle
// field holds the context's address: the profiler never sees the ncclComm_t.
void Publish(Runtime& rt, const Comm& c, const char* name) {
  trace::CommInfo info;
  info.id = c.id;
  info.origin = trace::kCommFromUniqueId;  // the profiler cannot tell a split from an init
  info.rank = c.rank;
  info.nranks = c.nranks;
  info.created_monotonic_ns = ProbeNowNs();
  info.handle = reinterpret_cast<uintptr_t>(&c);
  info.name = name != nullptr && *name != '\0' ? std::string(name) : DefaultName(c.id);
  rt.ring->AddComm(info);
  if (rt.ring->GlobalRank() < 0 && c.rank >= 0) rt.ring->SetGlobalRank(c.rank, c.nranks);
}

// The creation as a closed comm_init_rank record (comm_id, aux = rank << 32 | nranks, as the
// interposer writes it), stamped when NCCL called the profiler's init.
void RecordCreation(Runtime& rt, const Comm& c) {
  trace::RecordData d = ProbeRecord(trace::OpType::kCommInitRank, c.id);
  d.aux = PackAux(c.rank, c.nranks);
  d.result = ncclSuccess;
  rt.ring->Append(d, false);
}

// The runtime when this recorder takes the communicator (creating it when none exists), else
// null. The runtime says who created it, so concurrent inits of several communicators agree
// without a lock of their own.
Runtime* TakeRuntime(int rank, int nranks) {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (rt == kRuntimeOff) return nullptr;
  if (rt == nullptr) {
    // The runtime's creation must not record anything of ours, as in BeginCall.
    ThreadState& ts = Tls();
    const uint32_t saved = ts.in_probe;
    ts.in_probe = 1;
    rt = InitRuntimeFromProfiler();
    ts.in_probe = saved;
    if (rt == nullptr) return nullptr;
  }
  if (!rt->created_by_profiler) return nullptr;
  // A creation the interposer recorded (an LD_PRELOADed process that also has a statically
  // linked NCCL, say) is the interposer's communicator.
  if (FindCreatingComm(*rt->ring, CachedTid(Tls()), rank, nranks) != 0) return nullptr;
  if (g_handles.load(std::memory_order_acquire) == nullptr) {
    auto* pool = new Handle[kHandlePoolSize];
    Handle* none = nullptr;
    // Another communicator's init may have won: its pool is the one events use.
    if (!g_handles.compare_exchange_strong(none, pool, std::memory_order_acq_rel)) delete[] pool;
  }
  return rt;
}

}  // namespace

Comm* CommOf(const void* context) noexcept {
  Comm* c = InArray(g_comms, kMaxComms, context);
  return c != nullptr && c->live.load(std::memory_order_acquire) ? c : nullptr;
}

Handle* HandleOf(const void* handle) noexcept {
  return InArray(g_handles.load(std::memory_order_acquire), kHandlePoolSize, handle);
}

Handle* HandlePool() noexcept {
  return g_handles.load(std::memory_order_acquire);
}

namespace {

// Whether events of h's operation may still come: it waits for its Coll/P2p event, or some of its
// kernel channels have not stopped (a part to the rank itself has none in NCCL 2.28.9), or, for
// an AlltoAll, Gather or Scatter, some of its parts' channels. Such a handle must not be reused:
// a late KernelCh event would land on the next operation, and the long one would never complete
// in the records (it would read as hung).
bool WholeBusy(const Handle& w) noexcept {
  return w.stage.load(std::memory_order_acquire) != kStageRecorded ||
         w.parts_launched.load(std::memory_order_relaxed) <
             w.remote_parts.load(std::memory_order_relaxed) ||
         w.stopped.load(std::memory_order_relaxed) < w.channels.load(std::memory_order_relaxed);
}

bool Busy(const Handle& h) noexcept {
  if (h.tag.load(std::memory_order_acquire) != (kHandleTag | kKindOp)) return false;
  if (h.parts.load(std::memory_order_relaxed) != 0) return WholeBusy(h);
  // A part: its events go to its call, and come while the call's do.
  if (const Handle* w = h.whole.load(std::memory_order_acquire)) return WholeBusy(*w);
  if (h.stage.load(std::memory_order_relaxed) != kStageLaunched) return true;
  const Comm* c = h.comm.load(std::memory_order_relaxed);
  const auto op = static_cast<trace::OpType>(h.op.load(std::memory_order_relaxed));
  if (trace::IsP2P(op) && c != nullptr && h.peer.load(std::memory_order_relaxed) == c->rank) {
    return false;
  }
  return h.stopped.load(std::memory_order_relaxed) < h.channels.load(std::memory_order_relaxed);
}

// Bounded: past this many busy handles in a row (hung operations), the next one is reused.
constexpr uint32_t kMaxHandleProbes = 16;

}  // namespace

Handle* NewHandle(uint32_t kind, Comm* c) noexcept {
  Handle* pool = g_handles.load(std::memory_order_acquire);
  Handle* h_ptr = nullptr;
  for (uint32_t k = 0; k < kMaxHandleProbes && h_ptr == nullptr; ++k) {
    // A fresh index per probe: two threads never look at the same handle (short of a whole
    // pool's worth of concurrent claims).
    Handle& probe =
        pool[g_next_handle.fetch_add(1, std::memory_order_relaxed) & (kHandlePoolSize - 1)];
    if (!Busy(probe)) h_ptr = &probe;
  }
  if (h_ptr == nullptr) {
    h_ptr = &pool[g_next_handle.fetch_add(1, std::memory_order_relaxed) & (kHandlePoolSize - 1)];
    g_counters.busy_reused.fetch_add(1, std::memory_order_relaxed);
  }
  Handle& h = *h_ptr;
  h.tag.store(0, std::memory_order_relaxed);
  h.comm.store(c, std::memory_order_relaxed);
  h.group_id.store(0, std::memory_order_relaxed);
  h.group_flags.store(0, std::memory_order_relaxed);
  h.end_enter_ns.store(0, std::memory_order_relaxed);
  h.stage.store(kStageApi, std::memory_order_relaxed);
  h.op.store(0, std::memory_order_relaxed);
  h.tracked.store(false, std::memory_order_relaxed);
  h.seq.store(0, std::memory_order_relaxed);
  h.peer.store(-1, std::memory_order_relaxed);
  h.nccl_seq.store(0, std::memory_order_relaxed);
  h.channels.store(1, std::memory_order_relaxed);
  h.started.store(0, std::memory_order_relaxed);
  h.stopped.store(0, std::memory_order_relaxed);
  h.whole.store(nullptr, std::memory_order_relaxed);
  h.parts.store(0, std::memory_order_relaxed);
  h.remote_parts.store(0, std::memory_order_relaxed);
  h.parts_joined.store(0, std::memory_order_relaxed);
  h.parts_stopped.store(0, std::memory_order_relaxed);
  h.parts_launched.store(0, std::memory_order_relaxed);
  h.done.store(false, std::memory_order_relaxed);
  h.kernel_channels.Reset();
  h.tag.store(kHandleTag | kind, std::memory_order_release);
  return &h;
}

Counters& GetCounters() noexcept {
  return g_counters;
}

bool Init(int abi, void** context, uint64_t comm_hash, int* mask, const char* comm_name, int nranks,
          int rank) noexcept {
  try {
    Runtime* rt = TakeRuntime(rank, nranks);
    if (rt == nullptr) return false;
    const uint32_t i = g_next_comm.fetch_add(1, std::memory_order_relaxed);
    if (i >= kMaxComms || nranks <= 0) {
      if (i >= kMaxComms && !g_warned_full.exchange(true)) {
        Warn("profiler: more than %u communicators; the others are not recorded", kMaxComms);
      }
      return true;
    }
    Comm& c = g_comms[i];
    c.id = comm_hash;
    c.abi = abi;
    c.rank = rank;
    c.nranks = nranks;
    c.send_seq = new std::atomic<uint64_t>[static_cast<size_t>(nranks)]();
    c.recv_seq = new std::atomic<uint64_t>[static_cast<size_t>(nranks)]();
    Publish(*rt, c, comm_name);
    RecordCreation(*rt, c);
    c.live.store(true, std::memory_order_release);
    // One int for the whole process: another plugin's bits are kept. Proxy detail as in the
    // interposed mode: NCCLSCOPE_PROFILER_PROXY, or while the watchdog suspects a hang.
    profiler::AttachMask(mask, abi >= 5 ? kMaskV5 : kMaskV4,
                         profiler::ParseProxyDetailMode(rt->config.profiler_proxy.c_str()),
                         *rt->ring);
    if (context != nullptr) *context = &c;
    return true;
  } catch (...) {
    WarnOnce(WarnKey::kInternal, "profiler: cannot record a communicator (out of memory)");
    return true;
  }
}

bool AnyComm() noexcept {
  return g_next_comm.load(std::memory_order_relaxed) != 0;
}

bool OwnsContext(const void* context) noexcept {
  return InArray(g_comms, kMaxComms, context) != nullptr;
}

bool OwnsHandle(const void* handle) noexcept {
  return HandleOf(handle) != nullptr;
}

Stats GetStats() noexcept {
  Stats s;
  const uint32_t n = g_next_comm.load(std::memory_order_relaxed);
  s.comms = n < kMaxComms ? n : kMaxComms;
  s.records = g_counters.records.load(std::memory_order_relaxed);
  s.completions = g_counters.completions.load(std::memory_order_relaxed);
  s.markers = g_counters.markers.load(std::memory_order_relaxed);
  s.busy_reused = g_counters.busy_reused.load(std::memory_order_relaxed);
  return s;
}

}  // namespace ncclscope::plugin::plugin_only
