// Plugin-only recording, the hot part: how a recorded operation gets its number, and the record
// written when it does (plugin_only_recorder.h says what each event gives and in which order
// NCCL emits them; profiler_numbering.h how this differs from the interposed mode). The event
// path around it (handles, start markers, kernel channels, proxy operations) is the profiler's
// one (profiler_events.cpp).
#include <cstdint>

#include "plugin/core/plugin_only_names.h"
#include "plugin/core/probe_clock.h"
#include "plugin/core/thread_state.h"
#include "plugin/nvtx/nvtx_nccl_payload_calls.h"
#include "plugin/profiler/plugin_only_recorder.h"
#include "plugin/profiler/plugin_only_state.h"
#include "plugin/profiler/profiler_numbering.h"
#include "plugin/runtime/runtime.h"
#include "trace/record.h"

namespace ncclscope::plugin::plugin_only {
namespace {

using profiler::Context;
using profiler::Event;
using profiler::Handle;
using profiler::HandleOfKind;
using profiler::kKindGroup;
using profiler::kKindOp;
using profiler::kStageApi;
using profiler::kStageLaunched;
using profiler::kStageNumbered;
using trace::OpType;

// NCCL's state values (src/include/plugin/profiler/profiler_v5.h, 2.28.9).
constexpr int kStateGroupEndApiStart = 24;

std::atomic<uint64_t> g_group_ids{0};

Runtime* LiveRuntime() noexcept {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  return rt == kRuntimeOff ? nullptr : rt;
}

// The operation handle a v5 Coll/P2p event's parentObj names, when it is one of ours of the same
// communicator.
Handle* OpParent(const void* parent, const Context& c) noexcept {
  Handle* h = HandleOfKind(parent, kKindOp);
  return h != nullptr && h->ctx.load(std::memory_order_relaxed) == &c ? h : nullptr;
}

trace::RecordData BaseRecord(OpType op, uint64_t comm_id) noexcept {
  trace::RecordData d{};
  d.op = static_cast<uint32_t>(op);
  d.comm_id = comm_id;
  d.t_device_done_ns = trace::kDoneUntracked;
  d.dtype = -1;
  d.redop = -1;
  d.peer = -1;
  d.result = ncclSuccess;
  return d;
}

bool TrackCompletion(bool graph_captured) noexcept {
  const Runtime* rt = LiveRuntime();
  return rt != nullptr && rt->config.track_completion && !graph_captured;
}

// A new operation of the call e describes, at its API event (v5) or its Coll/P2p event (v4),
// under its group (the event's parent).
Handle* StartOp(Context& c, const Event& e, OpType op, int root) noexcept {
  const int64_t now = ProbeNowNs();
  Handle* h = profiler::NewHandle(kKindOp, &c);
  if (const Handle* g = HandleOfKind(e.parent, kKindGroup)) {
    h->group_id.store(g->group_id.load(std::memory_order_relaxed), std::memory_order_relaxed);
    h->group_flags.store(g->group_flags.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  h->op.store(static_cast<uint32_t>(op), std::memory_order_relaxed);
  h->count.store(e.count, std::memory_order_relaxed);
  h->dtype.store(DtypeOfName(e.datatype), std::memory_order_relaxed);
  h->root.store(IsRooted(op) ? root : -1, std::memory_order_relaxed);
  h->stream.store(reinterpret_cast<uintptr_t>(e.stream), std::memory_order_relaxed);
  h->t_enter_ns.store(now, std::memory_order_relaxed);
  h->t_exit_ns.store(now, std::memory_order_relaxed);
  h->tid.store(CachedTid(Tls()), std::memory_order_relaxed);
  h->tracked.store(TrackCompletion(e.graph_captured), std::memory_order_relaxed);
  return h;
}

// The reduction op of the collective the calling thread is in, from NCCL's own NVTX range around
// the API call (nvtx_nccl_payload_calls.h: NCCL 2.28.9 starts and stops the CollApi event inside
// it, and launches an ungrouped call's Coll inside it too), when that range is the same function
// on the same communicator (its commHash). -1 otherwise: NVTX not injected, NCCL_NVTX_DISABLE=1,
// another NCCL's layout, or inside ncclGroupEnd.
int32_t RedOpOfCurrentCall(OpType op, const Context& c) noexcept {
  NcclCallArgs a;
  if (!CurrentNcclCallArgs(&a) || a.op != op || a.comm_hash != c.comm_id) return -1;
  return a.redop;
}

// 0 when the peer is out of range (NCCL rejects such a call before any event; kept defensive).
uint64_t NextP2pSeq(Context& c, OpType op, int peer) noexcept {
  if (peer < 0 || peer >= c.nranks) return 0;
  std::atomic<uint64_t>* counters = op == OpType::kSend ? c.send_seq : c.recv_seq;
  return counters[peer].fetch_add(1, std::memory_order_relaxed) + 1;
}

// The operation was launched: its channel count is known and kernel events may follow.
void Launched(Handle& h, uint64_t nccl_seq, uint8_t channels) noexcept {
  h.nccl_seq.store(nccl_seq, std::memory_order_relaxed);
  h.channels.store(channels != 0 ? channels : 1, std::memory_order_relaxed);
  h.stage.store(kStageLaunched, std::memory_order_release);
}

// A send or receive at its P2p event, which carries the peer: numbered and recorded; a part of a
// collective launched.
Handle* OnP2p(Context& c, Handle& h, int peer, uint8_t channels) noexcept {
  const auto op = static_cast<OpType>(h.op.load(std::memory_order_relaxed));
  if (!trace::IsP2P(op)) return nullptr;
  h.peer.store(peer, std::memory_order_relaxed);  // a part's, for its channels and proxy ops
  if (PartLaunched(h, channels)) return &h;
  WriteRecord(h, c, NextP2pSeq(c, op, peer), peer);
  Launched(h, 0, channels);
  return &h;
}

// GroupEndApiStart of a user group: the thread entered its outermost ncclGroupEnd, which may
// block (connection setup waits for the peers), so the record is open until the GroupApi stops.
void OpenGroupEnd(Handle& g) noexcept {
  Runtime* rt = LiveRuntime();
  if (rt == nullptr || g.group_flags.load(std::memory_order_relaxed) == 0) return;
  trace::RecordData d = BaseRecord(OpType::kGroupEnd, 0);
  d.group_id = g.group_id.load(std::memory_order_relaxed);
  d.t_enter_ns = ProbeNowNs();
  d.result = trace::kResultInCall;
  d.tid = CachedTid(Tls());
  g.end_slot.store(rt->ring->Append(d, false), std::memory_order_relaxed);
  g.end_tid.store(d.tid, std::memory_order_relaxed);
  g.end_enter_ns.store(d.t_enter_ns, std::memory_order_release);
}

void CloseGroupEnd(Handle& g) noexcept {
  const int64_t enter = g.end_enter_ns.exchange(0, std::memory_order_acq_rel);
  Runtime* rt = LiveRuntime();
  if (enter == 0 || rt == nullptr) return;
  trace::RecordData d = BaseRecord(OpType::kGroupEnd, 0);
  d.group_id = g.group_id.load(std::memory_order_relaxed);
  d.t_enter_ns = enter;
  d.t_exit_ns = ProbeNowNs();
  d.tid = g.end_tid.load(std::memory_order_relaxed);
  rt->ring->CloseCall(g.end_slot.load(std::memory_order_relaxed), d);
}

}  // namespace

// Appends the operation's record with sequence number seq (and `peer` for send/recv, `redop` for
// a reduction) and publishes where it is.
void WriteRecord(Handle& h, const Context& c, uint64_t seq, int peer, int32_t redop) noexcept {
  Runtime* rt = LiveRuntime();
  if (rt == nullptr) return;
  const auto op = static_cast<OpType>(h.op.load(std::memory_order_relaxed));
  trace::RecordData d = BaseRecord(op, c.comm_id);
  d.seq = seq;
  d.group_id = h.group_id.load(std::memory_order_relaxed);
  d.flags = h.group_flags.load(std::memory_order_relaxed);
  d.count = h.count.load(std::memory_order_relaxed);
  d.stream = h.stream.load(std::memory_order_relaxed);
  d.dtype = h.dtype.load(std::memory_order_relaxed);
  d.redop = redop;
  d.peer = trace::IsP2P(op) ? peer : h.root.load(std::memory_order_relaxed);
  d.t_enter_ns = h.t_enter_ns.load(std::memory_order_relaxed);
  d.t_exit_ns = h.t_exit_ns.load(std::memory_order_relaxed);
  d.tid = h.tid.load(std::memory_order_relaxed);
  const bool tracked = h.tracked.load(std::memory_order_relaxed);
  if (tracked) d.flags |= trace::kFlagCompletionTracked;
  h.seq.store(seq, std::memory_order_relaxed);
  // The handle's peer is a send's or receive's (the record's peer field of a collective is its
  // root, which the handle keeps apart).
  if (trace::IsP2P(op)) h.peer.store(peer, std::memory_order_relaxed);
  h.slot.store(rt->ring->Append(d, tracked), std::memory_order_relaxed);
  GetCounters().records.fetch_add(1, std::memory_order_relaxed);
}

uint64_t NextCollSeq(Context& c) noexcept {
  return c.coll_seq.fetch_add(1, std::memory_order_relaxed) + 1;
}

bool CompleteDeviceOf(const Handle& h) noexcept {
  Runtime* rt = LiveRuntime();
  if (rt == nullptr ||
      !rt->ring->CompleteDevice(h.slot.load(std::memory_order_relaxed), ProbeNowNs())) {
    return false;
  }
  GetCounters().completions.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// A new group: v5 GroupApi (depth > 1 is the user's group) or v4 Group.
Handle* StartGroup(Context& c, const Event& e) noexcept {
  Handle* h = profiler::NewHandle(kKindGroup, &c);
  h->group_id.store(g_group_ids.fetch_add(1, std::memory_order_relaxed) + 1,
                    std::memory_order_relaxed);
  h->group_flags.store(e.group_depth > 1 ? trace::kFlagInGroup : 0, std::memory_order_relaxed);
  return h;
}

// v5 opens an operation at its API event; the collective is numbered at its stop (StopHandle), a
// send or receive at its P2p event.
Handle* OpenCall(Context& c, const Event& e) noexcept {
  const OpType op = OpOfFunc(e.func);
  if (e.kind == Event::kCollApi) {
    return trace::IsCollective(op) ? StartOp(c, e, op, e.root) : nullptr;
  }
  if (!trace::IsP2P(op)) return nullptr;
  Handle* h = StartOp(c, e, op, -1);
  JoinWhole(c, e.parent, *h);
  return h;
}

// v5 launches the operation its API event opened (a collective numbered at its API stop, a send
// or receive not yet); v4 opens it here too, from the arguments its Coll/P2p event carries.
Handle* LaunchCall(Context& c, const Event& e) noexcept {
  if (e.kind == Event::kColl) {
    Handle* h = nullptr;
    if (e.has_api) {
      h = OpParent(e.parent, c);
      if (h == nullptr || h->stage.load(std::memory_order_acquire) != kStageNumbered) {
        return nullptr;
      }
    } else {
      const OpType op = OpOfFunc(e.func);
      if (!trace::IsCollective(op)) return nullptr;
      h = StartOp(c, e, op, e.root);
      WriteRecord(*h, c, NextCollSeq(c), -1, RedOpOfCurrentCall(op, c));
    }
    Launched(*h, e.nccl_seq, e.channels);
    return h;
  }
  Handle* h = nullptr;
  if (e.has_api) {
    h = OpParent(e.parent, c);
    if (h == nullptr || h->stage.load(std::memory_order_acquire) != kStageApi) return nullptr;
  } else {
    const OpType op = OpOfFunc(e.func);
    if (!trace::IsP2P(op)) return nullptr;
    h = StartOp(c, e, op, -1);
  }
  return OnP2p(c, *h, e.peer, e.channels);
}

// The stop that matters is the API event's: a collective is recorded there (enqueued, numbered
// in call order), a send/receive learns its exit time (its record waits for the peer, at P2p).
// A group's stop closes its group_end record. The other stops (Coll, P2p) carry nothing.
void StopHandle(Handle& h) noexcept {
  if (h.tag.load(std::memory_order_acquire) == (profiler::kHandleTag | kKindGroup)) {
    CloseGroupEnd(h);
    return;
  }
  if (h.tag.load(std::memory_order_acquire) != (profiler::kHandleTag | kKindOp) ||
      h.stage.load(std::memory_order_acquire) != kStageApi) {
    return;
  }
  Context* c = h.ctx.load(std::memory_order_relaxed);
  if (c == nullptr) return;
  h.t_exit_ns.store(ProbeNowNs(), std::memory_order_relaxed);
  if (PartStopped(h)) return;
  const auto op = static_cast<OpType>(h.op.load(std::memory_order_relaxed));
  if (trace::IsCollective(op)) {
    WriteRecord(h, *c, NextCollSeq(*c), -1, RedOpOfCurrentCall(op, *c));
    h.stage.store(kStageNumbered, std::memory_order_release);
  }
}

void RecordGroupState(Handle& g, int state) noexcept {
  const Context* c = g.ctx.load(std::memory_order_relaxed);
  if (state == kStateGroupEndApiStart && c != nullptr && c->records) OpenGroupEnd(g);
}

// KernelChStop: once every channel of the operation stopped, its device work is done. The time
// is the host's when the last stop arrived: pTimer is the GPU's clock.
void KernelChannelStopped(void* owner) noexcept {
  Handle& h = *static_cast<Handle*>(owner);
  if (h.stage.load(std::memory_order_acquire) != kStageLaunched) return;
  const uint32_t stopped = h.stopped.fetch_add(1, std::memory_order_relaxed) + 1;
  if (PartChannelStopped(h)) return;
  if (stopped != h.channels.load(std::memory_order_relaxed) ||
      !h.tracked.load(std::memory_order_relaxed)) {
    return;
  }
  CompleteDeviceOf(h);
}

}  // namespace ncclscope::plugin::plugin_only
