// The profiler beside the interposer: its init, and how its events get the interposer's numbers
// (profiler_numbering.h). The event path itself is profiler_events.cpp.
#include "plugin/profiler/profiler_plugin.h"

#include <cstring>

#include "plugin/core/thread_state.h"
#include "plugin/core/warn.h"
#include "plugin/profiler/plugin_only_recorder.h"
#include "plugin/profiler/profiler_handles.h"
#include "plugin/profiler/profiler_identity.h"
#include "plugin/profiler/profiler_numbering.h"
#include "plugin/profiler/proxy_mask.h"
#include "plugin/runtime/probe_record.h"
#include "plugin/runtime/runtime.h"
#include "plugin/runtime/v4_call_log.h"
#include "trace/record.h"

namespace ncclscope::plugin::profiler {
namespace {

using trace::OpType;

// A communicator's CommState is looked up in the comm map at most this often per context.
constexpr uint32_t kMaxStateLookups = 4;

std::atomic<uint32_t> g_contexts{0};
std::atomic<uint64_t> g_unresolved{0};
std::atomic<bool> g_warned_pool{false};

// What an operation handle says of its operation.
struct OpKey {
  uint64_t seq = 0;
  uint32_t op = 0;
  int32_t peer = -1;
};

Handle* NewOpHandle(Context& c, OpKey key, OpStage stage) noexcept {
  Handle* h = NewHandle(kKindOp, &c);
  h->seq.store(key.seq, std::memory_order_relaxed);
  h->op.store(key.op, std::memory_order_relaxed);
  h->peer.store(key.peer, std::memory_order_relaxed);
  h->stage.store(stage, std::memory_order_release);
  return h;
}

CommState* StateOf(Context& c) noexcept {
  CommState* cs = c.state.load(std::memory_order_acquire);
  if (cs != nullptr) return cs;
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (rt == nullptr || rt == kRuntimeOff ||
      c.state_lookups.fetch_add(1, std::memory_order_relaxed) >= kMaxStateLookups) {
    return nullptr;
  }
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

bool IsP2pOp(uint32_t op) noexcept {
  return trace::IsP2P(static_cast<OpType>(op));
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
uint32_t OpOfP2pFunc(const char* func) noexcept {
  if (func != nullptr && std::strcmp(func, "Send") == 0)
    return static_cast<uint32_t>(OpType::kSend);
  if (func != nullptr && std::strcmp(func, "Recv") == 0)
    return static_cast<uint32_t>(OpType::kRecv);
  return 0;
}

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

// The API event's handle behind a v5 Coll/P2p event's parent, when it is one of ours of c.
const Handle* ApiParent(const Event& e, const Context& c) noexcept {
  const Handle* api = HandleOfKind(e.parent, kKindOp);
  return api != nullptr && api->ctx.load(std::memory_order_relaxed) == &c &&
                 api->stage.load(std::memory_order_acquire) == kStageNumbered
             ? api
             : nullptr;
}

// A v5 Coll takes its CollApi parent's key (with graph capture NCCL emits it again at each
// replay, under the same parent).
OpKey KeyOfV5Coll(const Context& c, const Event& e) noexcept {
  OpKey k;
  if (const Handle* api = ApiParent(e, c)) {
    k.seq = api->seq.load(std::memory_order_relaxed);
    k.op = api->op.load(std::memory_order_relaxed);
  }
  return k;
}

// A v5 P2p takes its P2pApi parent's key; a send/recv part must be the one its P2pApi numbered
// (same peer).
OpKey KeyOfV5P2p(const Context& c, const Event& e) noexcept {
  OpKey k{0, OpOfP2pFunc(e.func), e.peer};
  if (const Handle* api = ApiParent(e, c)) {
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

Handle* OpenInterposedCall(Context& c, const Event& e) noexcept {
  const OpKey k = e.kind == Event::kCollApi
                      ? OpKey{SeqOfCallInProgress(c, false), CallOp(false), -1}
                      : KeyOfCallInProgress(c, false, -1);
  return NewOpHandle(c, k, kStageNumbered);
}

Handle* LaunchInterposedCall(Context& c, const Event& e) noexcept {
  OpKey k;
  if (e.kind == Event::kColl) {
    k = e.has_api ? KeyOfV5Coll(c, e) : KeyOfV4Coll(c, e);
  } else {
    k = e.has_api ? KeyOfV5P2p(c, e) : KeyOfV4P2p(c, e);
  }
  Handle* h = NewOpHandle(c, k, kStageLaunched);
  h->nccl_seq.store(e.nccl_seq, std::memory_order_relaxed);
  return h;
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
  Context* cp = NewContext();
  if (cp == nullptr || !EnsureHandlePool()) {
    if (!g_warned_pool.exchange(true)) {
      Warn(
          "profiler: more than %u communicators (or no memory for event handles); device start "
          "events of the others are not recorded",
          kMaxContexts);
    }
    return ncclSuccess;
  }
  g_contexts.fetch_add(1, std::memory_order_relaxed);
  Context& c = *cp;
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
  c.live.store(true, std::memory_order_release);
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

Stats GetStats() noexcept {
  Stats s;
  s.contexts = g_contexts.load(std::memory_order_relaxed);
  s.unresolved_contexts = g_unresolved.load(std::memory_order_relaxed);
  const MarkerCounts m = GetMarkerCounts();
  s.markers = m.markers;
  s.unmapped_markers = m.unmapped;
  s.p2p_markers = m.p2p;
  return s;
}

}  // namespace ncclscope::plugin::profiler
