#include "plugin/profiler_plugin.h"

#include <cstring>

#include "plugin/export.h"
#include "plugin/probe_clock.h"
#include "plugin/profiler_identity.h"
#include "plugin/runtime.h"
#include "plugin/thread_state.h"
#include "plugin/warn.h"
#include "trace/record.h"

namespace ncclscope::plugin::profiler {
namespace {

using prof_abi::EventDescrV4;
using prof_abi::EventDescrV5;

// Tags of our handles ("ncscAPI1", "ncscCOL1" read as little-endian words).
constexpr uint64_t kTagCollApi = 0x31495041'6373636eULL;
constexpr uint64_t kTagColl = 0x314c4f43'6373636eULL;
// A collective's CommState is looked up in the comm map at most this often per context.
constexpr uint32_t kMaxStateLookups = 4;

Context g_contexts[kMaxContexts];
std::atomic<uint32_t> g_next_context{0};
EventHandle g_handles[kHandlePoolSize];
std::atomic<uint64_t> g_next_handle{0};
std::atomic<uint64_t> g_unresolved{0};
std::atomic<uint64_t> g_markers{0};
std::atomic<uint64_t> g_unmapped{0};
std::atomic<bool> g_warned_pool{false};
std::atomic<bool> g_warned_unrecorded{false};

Runtime* LiveRuntime() noexcept {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  return rt == kRuntimeOff ? nullptr : rt;
}

// A pointer NCCL hands back is ours only if it points at an element of our pools: a parentObj may
// come from another plugin instance or, for PXN proxy events, another process.
template <typename T, size_t N>
T* InPool(T (&pool)[N], const void* p) noexcept {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  const auto lo = reinterpret_cast<uintptr_t>(&pool[0]);
  if (addr < lo || addr >= lo + sizeof(pool) || (addr - lo) % sizeof(T) != 0) return nullptr;
  return &pool[(addr - lo) / sizeof(T)];
}

EventHandle* OurHandle(const void* p, uint64_t tag) noexcept {
  EventHandle* h = InPool(g_handles, p);
  return h != nullptr && h->tag.load(std::memory_order_acquire) == tag ? h : nullptr;
}

// Handles are recycled round-robin: by the time a slot comes round again (8192 events later) the
// kernel of the collective it described has long started (NCCL reports kernel starts through a
// 64-entry ring per channel).
EventHandle* NewHandle(uint64_t tag, Context* ctx, uint64_t seq, uint64_t nccl_seq) noexcept {
  const uint64_t i = g_next_handle.fetch_add(1, std::memory_order_relaxed);
  EventHandle& h = g_handles[i & (kHandlePoolSize - 1)];
  h.tag.store(0, std::memory_order_relaxed);
  h.ctx.store(ctx, std::memory_order_relaxed);
  h.seq.store(seq, std::memory_order_relaxed);
  h.nccl_seq.store(nccl_seq, std::memory_order_relaxed);
  h.started.store(0, std::memory_order_relaxed);
  h.tag.store(tag, std::memory_order_release);
  return &h;
}

// Our sequence number of the collective the calling thread is issuing on c's communicator: the
// interposer numbers it right after NCCL returns, so it is the counter plus one. Only valid inside
// an interposed call (otherwise the call is not recorded at all, and numbering it would claim a
// later call's number); 0 when unknown.
uint64_t SeqOfCallInProgress(Context& c, bool require_ungrouped) noexcept {
  const ThreadState& ts = Tls();
  if (ts.in_probe == 0 || (require_ungrouped && ts.group_depth != 0)) return 0;
  CommState* cs = c.state.load(std::memory_order_acquire);
  if (cs == nullptr) {
    Runtime* rt = LiveRuntime();
    if (rt == nullptr ||
        c.state_lookups.fetch_add(1, std::memory_order_relaxed) >= kMaxStateLookups)
      return 0;
    cs = FindCommState(*rt, c.comm_id, c.rank, c.name);
    if (cs == nullptr) return 0;
    c.state.store(cs, std::memory_order_release);
  }
  return cs->coll_seq.load(std::memory_order_relaxed) + 1;
}

trace::RecordData ProfilerRecord(trace::OpType op, uint64_t comm_id) noexcept {
  trace::RecordData d{};
  d.op = static_cast<uint32_t>(op);
  d.comm_id = comm_id;
  d.t_enter_ns = ProbeNowNs();
  d.t_exit_ns = d.t_enter_ns;
  d.t_device_done_ns = trace::kDoneUntracked;
  d.dtype = -1;
  d.redop = -1;
  d.peer = -1;
  d.tid = CachedTid(Tls());
  return d;
}

void WriteStartMarker(const EventHandle& coll, uint8_t channel, uint64_t gpu_start_ns) noexcept {
  Runtime* rt = LiveRuntime();
  const Context* c = coll.ctx.load(std::memory_order_relaxed);
  if (rt == nullptr || c == nullptr) return;
  trace::RecordData d = ProfilerRecord(trace::OpType::kDeviceStart, c->comm_id);
  d.seq = coll.seq.load(std::memory_order_relaxed);
  d.count = coll.nccl_seq.load(std::memory_order_relaxed);
  d.aux = gpu_start_ns;
  d.peer = channel;
  rt->ring->Append(d, false);
  g_markers.fetch_add(1, std::memory_order_relaxed);
  if (d.seq == 0) g_unmapped.fetch_add(1, std::memory_order_relaxed);
}

void OnKernelChannelStart(const void* parent, uint8_t channel, uint64_t gpu_start_ns) noexcept {
  EventHandle* coll = OurHandle(parent, kTagColl);
  // One marker per collective: its first channel to start.
  if (coll != nullptr && coll->started.exchange(1, std::memory_order_relaxed) == 0) {
    WriteStartMarker(*coll, channel, gpu_start_ns);
  }
}

}  // namespace

ncclResult_t Init(int abi, void** context, uint64_t comm_hash, int* mask, const char* comm_name,
                  int nranks, int rank) noexcept {
  if (context == nullptr) return ncclSuccess;
  // A null context opts this communicator out: NCCL keeps calling, and we ignore it.
  *context = nullptr;
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (rt == kRuntimeOff) return ncclSuccess;  // recording is off: that was warned about already
  if (rt == nullptr) {
    // No interposed call has run: the library was loaded as a plugin only, not preloaded.
    if (!g_warned_unrecorded.exchange(true)) {
      Warn(
          "profiler plugin loaded, but the probe is not recording (LD_PRELOAD libncclscope.so "
          "too); device start events are not recorded");
    }
    return ncclSuccess;
  }
  const uint64_t comm_id = FindCreatingComm(*rt->ring, CachedTid(Tls()), rank, nranks);
  if (comm_id == 0) {
    g_unresolved.fetch_add(1, std::memory_order_relaxed);
    return ncclSuccess;
  }
  const uint32_t i = g_next_context.fetch_add(1, std::memory_order_relaxed);
  if (i >= kMaxContexts) {
    if (!g_warned_pool.exchange(true)) {
      Warn(
          "profiler: more than %u communicators; device start events of the others are not "
          "recorded",
          kMaxContexts);
    }
    return ncclSuccess;
  }
  Context& c = g_contexts[i];
  c.abi = abi;
  c.rank = rank;
  c.nranks = nranks;
  c.nccl_comm_hash = comm_hash;
  c.comm_id = comm_id;
  if (comm_name != nullptr) {
    std::strncpy(c.name, comm_name, kNameBytes - 1);
    c.name[kNameBytes - 1] = '\0';
  }
  // The mask is one int for the whole process (another plugin's bits are kept); only asked for
  // once some communicator is ours, so a probe that records nothing costs NCCL nothing.
  if (mask != nullptr) {
    const uint64_t wanted = abi >= 5 ? kWantedMaskV5 : kWantedMaskV4;
    __atomic_fetch_or(mask, static_cast<int>(wanted), __ATOMIC_RELAXED);
  }
  trace::RecordData d = ProfilerRecord(trace::OpType::kProfilerAttach, comm_id);
  d.aux = comm_hash;
  d.count = static_cast<uint64_t>(abi);
  d.peer = rank;
  rt->ring->Append(d, false);
  *context = &c;
  return ncclSuccess;
}

ncclResult_t StartEventV5(void* context, void** handle, void* descr) noexcept {
  if (handle == nullptr) return ncclSuccess;
  *handle = nullptr;
  Context* c = InPool(g_contexts, context);
  if (c == nullptr || descr == nullptr) return ncclSuccess;
  const auto* d = static_cast<const EventDescrV5*>(descr);
  switch (d->type) {
    case prof_abi::kCollApi:
      *handle = NewHandle(kTagCollApi, c, SeqOfCallInProgress(*c, false), 0);
      break;
    case prof_abi::kColl: {
      const EventHandle* api = OurHandle(d->parentObj, kTagCollApi);
      const bool mine = api != nullptr && api->ctx.load(std::memory_order_relaxed) == c;
      *handle = NewHandle(kTagColl, c, mine ? api->seq.load(std::memory_order_relaxed) : 0,
                          d->coll.seqNumber);
      break;
    }
    case prof_abi::kKernelCh:
      OnKernelChannelStart(d->parentObj, d->kernelCh.channelId, d->kernelCh.pTimer);
      break;
    default:
      break;
  }
  return ncclSuccess;
}

// v4 has no CollApi event: a Coll event is numbered only when NCCL emits it inside a single
// interposed collective call (a blocking communicator outside any group); otherwise its marker
// says "unknown", which keeps the correlator from reading absences on that communicator.
ncclResult_t StartEventV4(void* context, void** handle, void* descr) noexcept {
  if (handle == nullptr) return ncclSuccess;
  *handle = nullptr;
  Context* c = InPool(g_contexts, context);
  if (c == nullptr || descr == nullptr) return ncclSuccess;
  const auto* d = static_cast<const EventDescrV4*>(descr);
  if (d->type == prof_abi::kColl) {
    *handle = NewHandle(kTagColl, c, SeqOfCallInProgress(*c, true), d->coll.seqNumber);
  } else if (d->type == prof_abi::kKernelCh) {
    OnKernelChannelStart(d->parentObj, d->kernelCh.channelId, d->kernelCh.pTimer);
  }
  return ncclSuccess;
}

// Stops carry nothing the hang question needs (completion comes from the completion tracker).
ncclResult_t StopEvent(void* /*handle*/) noexcept {
  return ncclSuccess;
}

ncclResult_t RecordEventState(void* /*handle*/, int /*state*/,
                              prof_abi::StateArgsV4* /*args*/) noexcept {
  return ncclSuccess;
}

// The context stays in the pool: handles of this communicator may still be in NCCL's hands.
ncclResult_t Finalize(void* /*context*/) noexcept {
  return ncclSuccess;
}

Stats GetStats() noexcept {
  Stats s;
  const uint32_t n = g_next_context.load(std::memory_order_relaxed);
  s.contexts = n < kMaxContexts ? n : kMaxContexts;
  s.unresolved_contexts = g_unresolved.load(std::memory_order_relaxed);
  s.markers = g_markers.load(std::memory_order_relaxed);
  s.unmapped_markers = g_unmapped.load(std::memory_order_relaxed);
  return s;
}

}  // namespace ncclscope::plugin::profiler

// The tables NCCL looks up (2.28.9: ncclProfiler_v5, then v4 ...; later releases v6 first).
namespace {

namespace prof = ncclscope::plugin::profiler;
using ncclscope::plugin::prof_abi::DebugLogger;
using ncclscope::plugin::prof_abi::StateArgsV4;

ncclResult_t InitV4(void** context, int* mask, const char* name, uint64_t comm_hash, int /*nNodes*/,
                    int nranks, int rank, DebugLogger /*log*/) {
  return prof::Init(4, context, comm_hash, mask, name, nranks, rank);
}
ncclResult_t InitV5(void** context, uint64_t comm_id, int* mask, const char* name, int /*nNodes*/,
                    int nranks, int rank, DebugLogger /*log*/) {
  return prof::Init(5, context, comm_id, mask, name, nranks, rank);
}
ncclResult_t InitV6(void** context, uint64_t comm_id, int* mask, const char* name, int /*nNodes*/,
                    int nranks, int rank, DebugLogger /*log*/) {
  return prof::Init(6, context, comm_id, mask, name, nranks, rank);
}
ncclResult_t StartV4(void* context, void** handle, void* descr) {
  return prof::StartEventV4(context, handle, descr);
}
ncclResult_t StartV5(void* context, void** handle, void* descr) {
  return prof::StartEventV5(context, handle, descr);
}
ncclResult_t Stop(void* handle) {
  return prof::StopEvent(handle);
}
ncclResult_t Record(void* handle, int state, StateArgsV4* args) {
  return prof::RecordEventState(handle, state, args);
}
ncclResult_t Fini(void* context) {
  return prof::Finalize(context);
}

}  // namespace

NCCLSCOPE_API const ncclscope::plugin::prof_abi::TableV6 ncclProfiler_v6 = {
    "ncclscope", InitV6, StartV5, Stop, Record, Fini};
NCCLSCOPE_API const ncclscope::plugin::prof_abi::TableV5 ncclProfiler_v5 = {
    "ncclscope", InitV5, StartV5, Stop, Record, Fini};
NCCLSCOPE_API const ncclscope::plugin::prof_abi::TableV4 ncclProfiler_v4 = {
    "ncclscope", InitV4, StartV4, Stop, Record, Fini};
