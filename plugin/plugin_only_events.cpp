// Plugin-only recording, the hot part: the profiler's events turned into the interposer's records
// (plugin_only_recorder.h says what each event gives and in which order NCCL emits them).
#include <cstdint>

#include "plugin/nvtx_nccl_payload_calls.h"
#include "plugin/plugin_only_names.h"
#include "plugin/plugin_only_recorder.h"
#include "plugin/plugin_only_state.h"
#include "plugin/probe_clock.h"
#include "plugin/proxy_progress.h"
#include "plugin/runtime.h"
#include "plugin/thread_state.h"
#include "trace/record.h"

namespace ncclscope::plugin::plugin_only {
namespace {

using trace::OpType;

// NCCL's state values (src/include/plugin/profiler/profiler_v5.h, 2.28.9).
constexpr int kStateGroupEndApiStart = 24;

std::atomic<uint64_t> g_group_ids{0};

Runtime* LiveRuntime() noexcept {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  return rt == kRuntimeOff ? nullptr : rt;
}

// The operation handle a Coll/P2p/KernelCh event's parentObj names, when it is one of ours of the
// same communicator.
Handle* OpParent(const void* parent, const Comm* c) noexcept {
  Handle* h = HandleOfKind(parent, kKindOp);
  return h != nullptr && h->comm.load(std::memory_order_relaxed) == c ? h : nullptr;
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

// A new group: v5 GroupApi (depth > 1 is the user's group) or v4 Group.
Handle* StartGroup(Comm* c, bool user_group) noexcept {
  Handle* h = NewHandle(kKindGroup, c);
  h->group_id.store(g_group_ids.fetch_add(1, std::memory_order_relaxed) + 1,
                    std::memory_order_relaxed);
  h->group_flags.store(user_group ? trace::kFlagInGroup : 0, std::memory_order_relaxed);
  return h;
}

// A new operation, at its API event (v5) or its Coll/P2p event (v4).
Handle* StartOp(Comm* c, const void* group, OpType op, size_t count, const char* dtype, int root,
                void* stream, bool graph_captured, int64_t now) noexcept {
  Handle* h = NewHandle(kKindOp, c);
  if (const Handle* g = HandleOfKind(group, kKindGroup)) {
    h->group_id.store(g->group_id.load(std::memory_order_relaxed), std::memory_order_relaxed);
    h->group_flags.store(g->group_flags.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  h->op.store(static_cast<uint32_t>(op), std::memory_order_relaxed);
  h->count.store(count, std::memory_order_relaxed);
  h->dtype.store(DtypeOfName(dtype), std::memory_order_relaxed);
  h->root.store(IsRooted(op) ? root : -1, std::memory_order_relaxed);
  h->stream.store(reinterpret_cast<uintptr_t>(stream), std::memory_order_relaxed);
  h->t_enter_ns.store(now, std::memory_order_relaxed);
  h->t_exit_ns.store(now, std::memory_order_relaxed);
  h->tid.store(CachedTid(Tls()), std::memory_order_relaxed);
  h->tracked.store(TrackCompletion(graph_captured), std::memory_order_relaxed);
  return h;
}

// The reduction op of the collective the calling thread is in, from NCCL's own NVTX range around
// the API call (nvtx_nccl_payload_calls.h: NCCL 2.28.9 starts and stops the CollApi event inside
// it, and launches an ungrouped call's Coll inside it too), when that range is the same function
// on the same communicator (its commHash). -1 otherwise: NVTX not injected, NCCL_NVTX_DISABLE=1,
// another NCCL's layout, or inside ncclGroupEnd.
int32_t RedOpOfCurrentCall(OpType op, const Comm& c) noexcept {
  NcclCallArgs a;
  if (!CurrentNcclCallArgs(&a) || a.op != op || a.comm_hash != c.id) return -1;
  return a.redop;
}

}  // namespace

Handle* HandleOfKind(const void* p, uint32_t kind) noexcept {
  Handle* h = HandleOf(p);
  return h != nullptr && h->tag.load(std::memory_order_acquire) == (kHandleTag | kind) ? h
                                                                                       : nullptr;
}

// Appends the operation's record with sequence number seq (and `peer` for send/recv, `redop` for
// a reduction) and publishes where it is.
void WriteRecord(Handle& h, const Comm& c, uint64_t seq, int peer, int32_t redop) noexcept {
  Runtime* rt = LiveRuntime();
  if (rt == nullptr) return;
  const auto op = static_cast<OpType>(h.op.load(std::memory_order_relaxed));
  trace::RecordData d = BaseRecord(op, c.id);
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
  h.peer.store(d.peer, std::memory_order_relaxed);
  h.slot.store(rt->ring->Append(d, tracked), std::memory_order_relaxed);
  GetCounters().records.fetch_add(1, std::memory_order_relaxed);
}

uint64_t NextCollSeq(Comm& c) noexcept {
  return c.coll_seq.fetch_add(1, std::memory_order_relaxed) + 1;
}

namespace {

// 0 when the peer is out of range (NCCL rejects such a call before any event; kept defensive).
uint64_t NextP2pSeq(Comm& c, OpType op, int peer) noexcept {
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

// A send or receive at its P2p event, which carries the peer; a part of a collective launched.
Handle* OnP2p(Comm& c, Handle& h, int peer, uint8_t channels) noexcept {
  const auto op = static_cast<OpType>(h.op.load(std::memory_order_relaxed));
  if (!trace::IsP2P(op)) return nullptr;
  h.peer.store(peer, std::memory_order_relaxed);  // a part's, for its channels and proxy ops
  if (PartLaunched(h, channels)) return &h;
  WriteRecord(h, c, NextP2pSeq(c, op, peer), peer);
  Launched(h, 0, channels);
  return &h;
}

}  // namespace

// The first kernel channel of an operation to start: its device_start (collective) or
// p2p_device_start (send/recv) record, in the fields the interposer mode's profiler writes them
// with (profiler_plugin.cpp, trace/record.h).
void WriteStartMarker(const Handle& h, const Comm& c, uint8_t channel, uint64_t gpu_ns) noexcept {
  Runtime* rt = LiveRuntime();
  if (rt == nullptr) return;
  const auto op = static_cast<OpType>(h.op.load(std::memory_order_relaxed));
  const bool p2p = trace::IsP2P(op);
  trace::RecordData d = BaseRecord(p2p ? OpType::kP2pDeviceStart : OpType::kDeviceStart, c.id);
  d.t_enter_ns = ProbeNowNs();
  d.t_exit_ns = d.t_enter_ns;
  d.seq = h.seq.load(std::memory_order_relaxed);
  d.aux = gpu_ns;
  if (p2p) {
    d.peer = h.peer.load(std::memory_order_relaxed);
    d.redop = static_cast<int32_t>(op);
    d.dtype = channel;
  } else {
    d.count = h.nccl_seq.load(std::memory_order_relaxed);
    d.peer = channel;
  }
  d.tid = CachedTid(Tls());
  rt->ring->Append(d, false);
  GetCounters().markers.fetch_add(1, std::memory_order_relaxed);
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

// KernelChStop: once every channel of the operation stopped, its device work is done. The time
// is the host's when the last stop arrived: pTimer is the GPU's clock.
void OnKernelChannelStop(Handle& h) noexcept {
  if (h.stage.load(std::memory_order_acquire) != kStageLaunched) return;
  const uint32_t stopped = h.stopped.fetch_add(1, std::memory_order_relaxed) + 1;
  if (PartChannelStopped(h)) return;
  if (stopped != h.channels.load(std::memory_order_relaxed) ||
      !h.tracked.load(std::memory_order_relaxed)) {
    return;
  }
  CompleteDeviceOf(h);
}

namespace {

// KernelCh start: the first channel writes the start marker; the channel's handle is
// proxy_progress.h's, whose KernelChStop comes back to the operation (OnKernelChannelStop).
void* OnKernelChannel(Comm& c, const void* parent, uint8_t channel, uint64_t gpu_ns) noexcept {
  Handle* h = OpParent(parent, &c);
  if (h == nullptr || h->stage.load(std::memory_order_acquire) != kStageLaunched) return nullptr;
  if (h->started.fetch_add(1, std::memory_order_relaxed) == 0 &&
      !PartChannelStarted(*h, channel, gpu_ns)) {
    WriteStartMarker(*h, c, channel, gpu_ns);
  }
  return StartKernelChannel(*h, channel);
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

// Event order and what each event gives: plugin_only_recorder.h. v5 opens an operation at its API
// event and launches it at its Coll/P2p event (parent: the API event); v4 opens and launches it at
// its Coll/P2p event, which carries the call's arguments (parent: the Group).
ncclResult_t StartEvent(void* context, void** handle, const profiler::Event& e) noexcept {
  using profiler::Event;
  if (handle == nullptr) return ncclSuccess;
  *handle = nullptr;
  Comm* c = CommOf(context);
  if (c == nullptr) return ncclSuccess;
  switch (e.kind) {
    case Event::kGroup:
      *handle = StartGroup(c, e.group_depth > 1);
      break;
    case Event::kCollApi: {
      const OpType op = OpOfFunc(e.func);
      if (!trace::IsCollective(op)) break;
      *handle = StartOp(c, e.parent, op, e.count, e.datatype, e.root, e.stream, e.graph_captured,
                        ProbeNowNs());
      break;
    }
    case Event::kP2pApi: {
      const OpType op = OpOfFunc(e.func);
      if (!trace::IsP2P(op)) break;
      Handle* h = StartOp(c, e.parent, op, e.count, e.datatype, -1, e.stream, e.graph_captured,
                          ProbeNowNs());
      JoinWhole(*c, e.parent, *h);
      *handle = h;
      break;
    }
    case Event::kColl: {
      if (!e.has_api) {
        const OpType op = OpOfFunc(e.func);
        if (!trace::IsCollective(op)) break;
        Handle* h =
            StartOp(c, e.parent, op, e.count, e.datatype, e.root, nullptr, false, ProbeNowNs());
        WriteRecord(*h, *c, NextCollSeq(*c), -1, RedOpOfCurrentCall(op, *c));
        Launched(*h, e.nccl_seq, e.channels);
        *handle = h;
        break;
      }
      Handle* h = OpParent(e.parent, c);
      if (h == nullptr || h->stage.load(std::memory_order_acquire) != kStageRecorded) break;
      Launched(*h, e.nccl_seq, e.channels);
      *handle = h;
      break;
    }
    case Event::kP2p: {
      if (!e.has_api) {
        const OpType op = OpOfFunc(e.func);
        if (!trace::IsP2P(op)) break;
        Handle* h = StartOp(c, e.parent, op, e.count, e.datatype, -1, nullptr, false, ProbeNowNs());
        *handle = OnP2p(*c, *h, e.peer, e.channels);
        break;
      }
      Handle* h = OpParent(e.parent, c);
      if (h == nullptr || h->stage.load(std::memory_order_acquire) != kStageApi) break;
      *handle = OnP2p(*c, *h, e.peer, e.channels);
      break;
    }
    case Event::kKernelCh:
      *handle = OnKernelChannel(*c, e.parent, e.channel, e.gpu_ns);
      break;
    case Event::kProxyOp:
      *handle = StartProxyOp(*c, e.parent, *e.proxy_op);
      break;
    case Event::kProxyStep:
      *handle = profiler::StartProxyStep(e.parent, e.step);
      break;
    default:
      break;
  }
  return ncclSuccess;
}

// The stop that matters is the API event's: a collective is recorded there (enqueued, numbered
// in call order), a send/receive learns its exit time (its record waits for the peer, at P2p).
// The other stops of our handles (Coll, P2p) carry nothing. KernelCh, ProxyOp and ProxyStep
// handles are proxy_progress.h's: their states and stops never come here (profiler_plugin.cpp
// hands them to RecordProxyState and StopProxyHandle).
ncclResult_t StopEvent(void* handle) noexcept {
  if (Handle* g = HandleOfKind(handle, kKindGroup)) {
    CloseGroupEnd(*g);
    return ncclSuccess;
  }
  Handle* h = HandleOfKind(handle, kKindOp);
  if (h == nullptr || h->stage.load(std::memory_order_acquire) != kStageApi) return ncclSuccess;
  Comm* c = h->comm.load(std::memory_order_relaxed);
  if (c == nullptr) return ncclSuccess;
  h->t_exit_ns.store(ProbeNowNs(), std::memory_order_relaxed);
  if (PartStopped(*h)) return ncclSuccess;
  const auto op = static_cast<OpType>(h->op.load(std::memory_order_relaxed));
  if (trace::IsCollective(op)) {
    WriteRecord(*h, *c, NextCollSeq(*c), -1, RedOpOfCurrentCall(op, *c));
    h->stage.store(kStageRecorded, std::memory_order_release);
  }
  return ncclSuccess;
}

ncclResult_t RecordEventState(void* handle, int state, prof_abi::StateArgsV4* /*args*/) noexcept {
  if (state == kStateGroupEndApiStart) {
    if (Handle* g = HandleOfKind(handle, kKindGroup)) OpenGroupEnd(*g);
  }
  return ncclSuccess;
}

}  // namespace ncclscope::plugin::plugin_only
