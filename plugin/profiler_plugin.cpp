#include "plugin/profiler_plugin.h"

#include <cstring>

#include "plugin/plugin_only_recorder.h"
#include "plugin/probe_clock.h"
#include "plugin/probe_record.h"
#include "plugin/profiler_event.h"
#include "plugin/profiler_identity.h"
#include "plugin/proxy_mask.h"
#include "plugin/proxy_progress.h"
#include "plugin/runtime.h"
#include "plugin/thread_state.h"
#include "plugin/warn.h"
#include "trace/record.h"

namespace ncclscope::plugin::profiler {
namespace {

using trace::OpType;

// Tags of our handles ("ncscAPI1", "ncscCOL1", "ncscPAP1", "ncscP2P1" read as little-endian words).
constexpr uint64_t kTagCollApi = 0x31495041'6373636eULL;
constexpr uint64_t kTagColl = 0x314c4f43'6373636eULL;
constexpr uint64_t kTagP2pApi = 0x31504150'6373636eULL;
constexpr uint64_t kTagP2p = 0x31503250'6373636eULL;
// A communicator's CommState is looked up in the comm map at most this often per context.
constexpr uint32_t kMaxStateLookups = 4;

Context g_contexts[kMaxContexts];
std::atomic<uint32_t> g_next_context{0};
EventHandle g_handles[kHandlePoolSize];
std::atomic<uint64_t> g_next_handle{0};
std::atomic<uint64_t> g_unresolved{0};
std::atomic<uint64_t> g_markers{0};
std::atomic<uint64_t> g_unmapped{0};
std::atomic<uint64_t> g_p2p_markers{0};
std::atomic<bool> g_warned_pool{false};

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

// What an event handle describes.
struct OpKey {
  uint64_t seq = 0;
  uint32_t op = 0;
  int32_t peer = -1;
};

// Whether a kernel channel of h's operation started and has not stopped: a long kernel, whose
// KernelChStop must still find its own channel bits (the stall stage read from kernel_channels
// records would otherwise blame the wrong operation).
bool KernelRunning(const EventHandle& h) noexcept {
  const uint64_t started = h.channels.started.load(std::memory_order_acquire);
  return (started & ~h.channels.stopped.load(std::memory_order_acquire)) != 0;
}

// Handles are recycled round-robin (by the time a slot comes round again, 8192 events later, the
// kernel of the operation it described has started: NCCL reports kernel starts through a 64-entry
// ring per channel), skipping those whose kernel still runs, at most kMaxHandleProbes in a row.
constexpr uint32_t kMaxHandleProbes = 16;
EventHandle* NewHandle(uint64_t tag, Context* ctx, OpKey key, uint64_t nccl_seq) noexcept {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  EventHandle* free_handle = nullptr;
  for (uint32_t k = 0; k < kMaxHandleProbes && free_handle == nullptr; ++k) {
    EventHandle& probe = g_handles[g_next_handle.fetch_add(1, kRelaxed) & (kHandlePoolSize - 1)];
    if (!KernelRunning(probe)) free_handle = &probe;
  }
  if (free_handle == nullptr) {
    free_handle = &g_handles[g_next_handle.fetch_add(1, kRelaxed) & (kHandlePoolSize - 1)];
  }
  EventHandle& h = *free_handle;
  h.tag.store(0, kRelaxed);
  h.ctx.store(ctx, kRelaxed);
  h.seq.store(key.seq, kRelaxed);
  h.op.store(key.op, kRelaxed);
  h.peer.store(key.peer, kRelaxed);
  h.nccl_seq.store(nccl_seq, kRelaxed);
  h.started.store(0, kRelaxed);
  h.channels.Reset();
  h.tag.store(tag, std::memory_order_release);
  return &h;
}

CommState* StateOf(Context& c) noexcept {
  CommState* cs = c.state.load(std::memory_order_acquire);
  if (cs != nullptr) return cs;
  Runtime* rt = LiveRuntime();
  if (rt == nullptr || c.state_lookups.fetch_add(1, std::memory_order_relaxed) >= kMaxStateLookups)
    return nullptr;
  cs = FindCommState(*rt, c.comm_id, c.rank, c.name);
  if (cs != nullptr) c.state.store(cs, std::memory_order_release);
  return cs;
}

// Our sequence number of the collective the calling thread is issuing on c's communicator: the
// interposer numbers it right after NCCL returns, so it is the counter plus one. Only valid inside
// an interposed call (otherwise the call is not recorded at all, and numbering it would claim a
// later call's number); 0 when unknown.
uint64_t SeqOfCallInProgress(Context& c, bool require_ungrouped) noexcept {
  const ThreadState& ts = Tls();
  if (ts.in_probe == 0 || (require_ungrouped && ts.group_depth != 0)) return 0;
  CommState* cs = StateOf(c);
  return cs == nullptr ? 0 : cs->coll_seq.load(std::memory_order_relaxed) + 1;
}

// The interposed operation in progress on this thread (trace::OpType), 0 outside one.
uint32_t CallOp(bool require_ungrouped) noexcept {
  const ThreadState& ts = Tls();
  if (ts.in_probe == 0 || (require_ungrouped && ts.group_depth != 0)) return 0;
  return ts.call_op;
}

// Collectives NCCL runs as point-to-point parts, one P2p event per peer and direction.
bool HasParts(uint32_t op) {
  return op == static_cast<uint32_t>(OpType::kAlltoAll) ||
         op == static_cast<uint32_t>(OpType::kGather) ||
         op == static_cast<uint32_t>(OpType::kScatter);
}

bool IsP2pOp(uint32_t op) {
  return op == static_cast<uint32_t>(OpType::kSend) || op == static_cast<uint32_t>(OpType::kRecv);
}

// The interposed operation whose NCCL call emits this P2pApi (v5) or P2p (v4) event on the calling
// thread. NCCL 2.28.9 runs send, recv, AlltoAll, Gather and Scatter through p2pTaskAppend
// (src/enqueue.cc), one P2pApi per (peer, direction) part, named "Send" or "Recv" even for an
// AlltoAll: only the interposer knows which call it is. A part of a collective takes the
// collective's number; a send or receive the next number of its (comm, peer, direction) counter,
// which the interposer bumps once NCCL returns. `peer` is the event's own peer (v4) or -1 (v5,
// whose P2pApi carries none).
OpKey KeyOfCallInProgress(Context& c, bool require_ungrouped, int peer) noexcept {
  const ThreadState& ts = Tls();
  OpKey k;
  if (ts.in_probe == 0 || ts.call_op == 0 || (require_ungrouped && ts.group_depth != 0)) return k;
  k.op = ts.call_op;
  if (!IsP2pOp(k.op)) {
    k.seq = SeqOfCallInProgress(c, require_ungrouped);
    return k;
  }
  k.peer = ts.call_peer;
  if (peer >= 0 && peer != k.peer) return k;
  const CommState* cs = StateOf(c);
  if (cs != nullptr) k.seq = cs->PeekP2PSeq(k.op == static_cast<uint32_t>(OpType::kSend), k.peer);
  return k;
}

// The operation a P2p event without a numbered parent belongs to, from NCCL's func name.
uint32_t OpOfP2pFunc(const char* func) {
  if (func != nullptr && std::strcmp(func, "Send") == 0)
    return static_cast<uint32_t>(OpType::kSend);
  if (func != nullptr && std::strcmp(func, "Recv") == 0)
    return static_cast<uint32_t>(OpType::kRecv);
  return 0;
}

void WriteStartMarker(const EventHandle& h, Context& c, uint8_t channel,
                      uint64_t gpu_start_ns) noexcept {
  Runtime* rt = LiveRuntime();
  if (rt == nullptr) return;
  const uint64_t seq = h.seq.load(std::memory_order_relaxed);
  const uint32_t op = h.op.load(std::memory_order_relaxed);
  trace::RecordData d;
  if (IsP2pOp(op)) {
    d = ProbeRecord(OpType::kP2pDeviceStart, c.comm_id);
    d.peer = h.peer.load(std::memory_order_relaxed);
    d.redop = static_cast<int32_t>(op);
    d.dtype = channel;
    g_p2p_markers.fetch_add(1, std::memory_order_relaxed);
  } else {
    // The parts of one AlltoAll/Gather/Scatter share its number: one marker for all of them.
    // Other collectives have one Coll event, whose handle writes one marker; markers of a group's
    // collectives come in NCCL's plan order (by size and type: src/enqueue.cc ncclPrepareTasks),
    // not in call order, so no number may suppress a smaller one there.
    if (seq != 0 && HasParts(op)) {
      uint64_t last = c.last_coll_marker.load(std::memory_order_relaxed);
      do {
        if (last >= seq) return;
      } while (!c.last_coll_marker.compare_exchange_weak(last, seq, std::memory_order_relaxed));
    }
    d = ProbeRecord(OpType::kDeviceStart, c.comm_id);
    d.count = h.nccl_seq.load(std::memory_order_relaxed);
    d.peer = channel;
  }
  d.seq = seq;
  d.aux = gpu_start_ns;
  rt->ring->Append(d, false);
  g_markers.fetch_add(1, std::memory_order_relaxed);
  if (seq == 0) g_unmapped.fetch_add(1, std::memory_order_relaxed);
}

// KernelCh start: one marker per operation (its first channel), the channel marked started, and a
// handle so NCCL reports the channel's stop (KernelChStop) to us.
void* OnKernelChannelStart(Context* c, const void* parent, uint8_t channel,
                           uint64_t gpu_start_ns) noexcept {
  EventHandle* op = OperationHandle(parent);
  if (op == nullptr || op->ctx.load(std::memory_order_relaxed) != c) return nullptr;
  if (op->started.exchange(1, std::memory_order_relaxed) == 0) {
    WriteStartMarker(*op, *c, channel, gpu_start_ns);
  }
  return StartKernelCh(op, channel);
}

}  // namespace

EventHandle* HandlePool() noexcept {
  return g_handles;
}

EventHandle* OperationHandle(const void* parent) noexcept {
  EventHandle* h = InPool(g_handles, parent);
  if (h == nullptr) return nullptr;
  const uint64_t tag = h->tag.load(std::memory_order_acquire);
  return tag == kTagColl || tag == kTagP2p ? h : nullptr;
}

bool AnyContext() noexcept {
  return g_next_context.load(std::memory_order_relaxed) != 0 || plugin_only::AnyComm();
}

ncclResult_t Init(int abi, void** context, uint64_t comm_hash, int* mask, const char* comm_name,
                  int nranks, int rank) noexcept {
  if (context == nullptr) return ncclSuccess;
  // A null context opts this communicator out: NCCL keeps calling, and we ignore it.
  *context = nullptr;
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (rt == kRuntimeOff) return ncclSuccess;  // recording is off: that was warned about already
  // No interposed call created the runtime (NCCL_PROFILER_PLUGIN without LD_PRELOAD), or this
  // plugin did: the profiler's events are then the records (plugin_only_recorder.h).
  if (plugin_only::Init(abi, context, comm_hash, mask, comm_name, nranks, rank)) {
    return ncclSuccess;
  }
  rt = g_runtime.load(std::memory_order_acquire);
  if (rt == nullptr || rt == kRuntimeOff) return ncclSuccess;
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
  if (abi < 5) rt->v4_profiler.store(true, std::memory_order_relaxed);
  c.rank = rank;
  c.nranks = nranks;
  c.nccl_comm_hash = comm_hash;
  c.comm_id = comm_id;
  if (comm_name != nullptr) {
    std::strncpy(c.name, comm_name, kNameBytes - 1);
    c.name[kNameBytes - 1] = '\0';
  }
  trace::RecordData d = ProbeRecord(OpType::kProfilerAttach, comm_id);
  d.aux = comm_hash;
  d.count = static_cast<uint64_t>(abi);
  d.peer = rank;
  rt->ring->Append(d, false);
  // The mask is one int for the whole process (another plugin's bits are kept); only asked for
  // once some communicator is ours, so a probe that records nothing costs NCCL nothing.
  AttachMask(mask, abi >= 5 ? kWantedMaskV5 : kWantedMaskV4,
             ParseProxyDetailMode(rt->config.profiler_proxy.c_str()), *rt->ring);
  *context = &c;
  return ncclSuccess;
}

namespace {

// v4 has no API events: a Coll or P2p event takes the number of the interposed call its
// arguments name (v4_call_log.h), wherever and whenever NCCL emits it; failing that, the call in
// progress on this thread when NCCL emits it inside a single interposed call (a blocking
// communicator outside any group: an AlltoAll's parts); otherwise its marker says "unknown",
// which keeps the correlator from reading absences on that communicator.
uint64_t ClaimV4Call(Context& c, const V4CallKey& key) noexcept {
  if (key.op == 0) return 0;
  CommState* cs = StateOf(c);
  return cs == nullptr ? 0 : cs->v4_calls.Claim(key);
}

OpKey KeyOfV4Coll(Context& c, const Event& e) noexcept {
  prof_abi::CollV4 coll{};
  coll.func = e.func;
  coll.sendBuff = e.send_buff;
  coll.recvBuff = const_cast<void*>(e.recv_buff);
  coll.count = e.count;
  coll.root = e.root;
  coll.datatype = e.datatype;
  const V4CallKey key = CollEventKey(coll);
  const uint64_t seq = ClaimV4Call(c, key);
  return seq != 0 ? OpKey{seq, key.op, -1} : OpKey{SeqOfCallInProgress(c, true), CallOp(true), -1};
}

OpKey KeyOfV4P2p(Context& c, const Event& e) noexcept {
  const V4CallKey key = P2pEventKey(e.func, e.send_buff, e.datatype, e.count, e.peer);
  const uint64_t seq = ClaimV4Call(c, key);
  OpKey k{seq, key.op, e.peer};
  if (seq == 0) {
    k = KeyOfCallInProgress(c, true, e.peer);
    if (k.op == 0) k = {0, OpOfP2pFunc(e.func), e.peer};
    if (IsP2pOp(k.op)) k.peer = e.peer;
  }
  return k;
}

// A v5 Coll takes its CollApi parent's key.
OpKey KeyOfV5Coll(const Context& c, const Event& e) noexcept {
  const EventHandle* api = OurHandle(e.parent, kTagCollApi);
  OpKey k;
  if (api != nullptr && api->ctx.load(std::memory_order_relaxed) == &c) {
    k.seq = api->seq.load(std::memory_order_relaxed);
    k.op = api->op.load(std::memory_order_relaxed);
  }
  return k;
}

// A v5 P2p takes its P2pApi parent's key; a send/recv part must be the one its P2pApi numbered
// (same peer).
OpKey KeyOfV5P2p(const Context& c, const Event& e) noexcept {
  const EventHandle* api = OurHandle(e.parent, kTagP2pApi);
  OpKey k{0, OpOfP2pFunc(e.func), e.peer};
  if (api != nullptr && api->ctx.load(std::memory_order_relaxed) == &c) {
    const uint32_t op = api->op.load(std::memory_order_relaxed);
    const int32_t peer = api->peer.load(std::memory_order_relaxed);
    if (op != 0 && (!IsP2pOp(op) || peer == e.peer)) {
      k.op = op;
      k.seq = api->seq.load(std::memory_order_relaxed);
    }
  }
  return k;
}

}  // namespace

// Event order (NCCL 2.28.9, src/plugin/profiler.cc and src/enqueue.cc): on the calling thread
// GroupApi, then CollApi or one P2pApi per (peer, direction) part, each started and stopped inside
// the call; at launch Coll (parent CollApi) and P2p (parent P2pApi); later, on the proxy thread,
// one KernelCh per channel (parent Coll or P2p) and, for network peers, ProxyOp (parent Coll or
// P2p) and its ProxySteps.
ncclResult_t StartEvent(void* context, void** handle, const Event& e) noexcept {
  if (handle == nullptr) return ncclSuccess;
  *handle = nullptr;
  if (plugin_only::OwnsContext(context)) return plugin_only::StartEvent(context, handle, e);
  Context* c = InPool(g_contexts, context);
  if (c == nullptr) return ncclSuccess;
  switch (e.kind) {
    case Event::kCollApi:
      *handle = NewHandle(kTagCollApi, c, {SeqOfCallInProgress(*c, false), CallOp(false), -1}, 0);
      break;
    case Event::kP2pApi:
      *handle = NewHandle(kTagP2pApi, c, KeyOfCallInProgress(*c, false, -1), 0);
      break;
    case Event::kColl:
      *handle =
          NewHandle(kTagColl, c, e.has_api ? KeyOfV5Coll(*c, e) : KeyOfV4Coll(*c, e), e.nccl_seq);
      break;
    case Event::kP2p:
      *handle = NewHandle(kTagP2p, c, e.has_api ? KeyOfV5P2p(*c, e) : KeyOfV4P2p(*c, e), 0);
      break;
    case Event::kKernelCh:
      *handle = OnKernelChannelStart(c, e.parent, e.channel, e.gpu_ns);
      break;
    case Event::kProxyOp:
      *handle = StartProxyOp(c, e.parent, *e.proxy_op);
      break;
    case Event::kProxyStep:
      *handle = StartProxyStep(e.parent, e.step);
      break;
    default:
      break;
  }
  return ncclSuccess;
}

// Stops of API, Coll and P2p events carry nothing the hang question needs (Coll/P2p stop means
// "enqueued"; completion comes from the completion tracker). Proxy and KernelCh stops do.
ncclResult_t StopEvent(void* handle) noexcept {
  if (plugin_only::OwnsHandle(handle)) return plugin_only::StopEvent(handle);
  if (handle != nullptr) StopProxyHandle(handle);
  return ncclSuccess;
}

ncclResult_t RecordEventState(void* handle, int state, prof_abi::StateArgsV4* args) noexcept {
  if (plugin_only::OwnsHandle(handle)) return plugin_only::RecordEventState(handle, state, args);
  if (handle != nullptr) RecordProxyState(handle, state);
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
  s.p2p_markers = g_p2p_markers.load(std::memory_order_relaxed);
  return s;
}

}  // namespace ncclscope::plugin::profiler
