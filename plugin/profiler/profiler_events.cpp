// The one event path behind every profiler table (profiler_event.h): which handle an event gets,
// the start marker of an operation's first kernel channel, kernel channels and proxy operations.
// How an operation gets its (op, seq) is the only part that depends on whether the profiler runs
// beside the interposer or records alone (profiler_numbering.h).
//
// Event order (NCCL 2.28.9, src/plugin/profiler.cc and src/enqueue.cc): on the calling thread
// GroupApi, then CollApi or one P2pApi per (peer, direction) part, each started and stopped inside
// the call; at launch Coll (parent CollApi) and P2p (parent P2pApi); later, on the proxy thread,
// one KernelCh per channel (parent Coll or P2p) and, for network peers, ProxyOp (parent Coll or
// P2p) and its ProxySteps. v4 (NCCL 2.26-2.27) has no API events: Coll and P2p carry the call's
// arguments, their parent being the Group.
#include "plugin/profiler/plugin_only_recorder.h"
#include "plugin/profiler/profiler_event.h"
#include "plugin/profiler/profiler_handles.h"
#include "plugin/profiler/profiler_numbering.h"
#include "plugin/profiler/profiler_plugin.h"
#include "plugin/profiler/proxy_progress.h"
#include "plugin/runtime/probe_record.h"
#include "plugin/runtime/runtime.h"
#include "trace/record.h"

namespace ncclscope::plugin::profiler {
namespace {

using trace::OpType;

std::atomic<uint64_t> g_markers{0};
std::atomic<uint64_t> g_unmapped{0};
std::atomic<uint64_t> g_p2p_markers{0};

// Collectives NCCL runs as point-to-point parts, one P2p event per peer and direction.
bool HasParts(uint32_t op) noexcept {
  return op == static_cast<uint32_t>(OpType::kAlltoAll) ||
         op == static_cast<uint32_t>(OpType::kGather) ||
         op == static_cast<uint32_t>(OpType::kScatter);
}

// The device_start (collectives) or p2p_device_start (send/recv: peer, direction, channel) record
// of h's operation (trace/record.h).
void WriteStartMarker(const Handle& h, const Context& c, uint8_t channel,
                      uint64_t gpu_ns) noexcept {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (rt == nullptr || rt == kRuntimeOff) return;
  const uint64_t seq = h.seq.load(std::memory_order_relaxed);
  const auto op = static_cast<OpType>(h.op.load(std::memory_order_relaxed));
  const bool p2p = trace::IsP2P(op);
  trace::RecordData d =
      ProbeRecord(p2p ? OpType::kP2pDeviceStart : OpType::kDeviceStart, c.comm_id);
  if (p2p) {
    d.peer = h.peer.load(std::memory_order_relaxed);
    d.redop = static_cast<int32_t>(op);
    d.dtype = channel;
    g_p2p_markers.fetch_add(1, std::memory_order_relaxed);
  } else {
    d.count = h.nccl_seq.load(std::memory_order_relaxed);
    d.peer = channel;
  }
  d.seq = seq;
  d.aux = gpu_ns;
  rt->ring->Append(d, false);
  g_markers.fetch_add(1, std::memory_order_relaxed);
  if (seq == 0) g_unmapped.fetch_add(1, std::memory_order_relaxed);
}

// Whose marker the first kernel channel of h writes, or null when none is due: one marker per
// call made of parts. A recorded part's is its whole call's, once the call is numbered. Beside the
// interposer the parts carry the call's op and number: one marker per number, the highest
// written so far; other collectives have one Coll event, whose handle writes one marker (markers
// of a group's collectives come in NCCL's plan order, by size and type: src/enqueue.cc
// ncclPrepareTasks, not in call order, so no number may suppress a smaller one there).
const Handle* MarkerOwner(const Handle& h, Context& c) noexcept {
  if (Handle* w = h.whole.load(std::memory_order_acquire)) {
    if (w->stage.load(std::memory_order_acquire) != kStageNumbered ||
        w->started.fetch_add(1, std::memory_order_relaxed) != 0) {
      return nullptr;
    }
    return w;
  }
  const uint64_t seq = h.seq.load(std::memory_order_relaxed);
  if (seq != 0 && HasParts(h.op.load(std::memory_order_relaxed))) {
    uint64_t last = c.last_coll_marker.load(std::memory_order_relaxed);
    do {
      if (last >= seq) return nullptr;
    } while (!c.last_coll_marker.compare_exchange_weak(last, seq, std::memory_order_relaxed));
  }
  return &h;
}

// KernelCh start: one marker per operation (its first channel), the channel marked started, and a
// handle (proxy_progress.h's) so NCCL reports the channel's stop (KernelChStop) to us.
void* StartKernelChannel(Context& c, const Event& e) noexcept {
  Handle* h = OperationHandle(e.parent, &c);
  if (h == nullptr) return nullptr;
  if (h->started.fetch_add(1, std::memory_order_relaxed) == 0) {
    if (const Handle* owner = MarkerOwner(*h, c)) WriteStartMarker(*owner, c, e.channel, e.gpu_ns);
  }
  return StartKernelCh(h->kernel_channels, e.channel,
                       c.records ? plugin_only::KernelChannelStopped : nullptr, h);
}

// ProxyOp start under a launched operation of c. PXN: another process's op, whose parent may well
// fall inside our pool's addresses, is never followed.
void* StartProxyOp(Context& c, const Event& e) noexcept {
  if (!IsOwnProxyOp(*e.proxy_op)) return nullptr;
  const Handle* h = OperationHandle(e.parent, &c);
  return h == nullptr ? nullptr : StartProxyOpFor(IdentityOf(*h, c), *e.proxy_op);
}

}  // namespace

ncclResult_t StartEvent(void* context, void** handle, const Event& e) noexcept {
  if (handle == nullptr) return ncclSuccess;
  *handle = nullptr;
  Context* c = ContextOf(context);
  if (c == nullptr) return ncclSuccess;
  switch (e.kind) {
    case Event::kGroup:
      if (c->records) *handle = plugin_only::StartGroup(*c, e);
      break;
    case Event::kCollApi:
    case Event::kP2pApi:
      *handle = c->records ? plugin_only::OpenCall(*c, e) : OpenInterposedCall(*c, e);
      break;
    case Event::kColl:
    case Event::kP2p:
      *handle = c->records ? plugin_only::LaunchCall(*c, e) : LaunchInterposedCall(*c, e);
      break;
    case Event::kKernelCh:
      *handle = StartKernelChannel(*c, e);
      break;
    case Event::kProxyOp:
      *handle = StartProxyOp(*c, e);
      break;
    case Event::kProxyStep:
      *handle = StartProxyStep(e.parent, e.step);
      break;
    default:
      break;
  }
  return ncclSuccess;
}

// KernelCh, ProxyOp and ProxyStep handles are proxy_progress.h's. Of ours, only a recording
// context's stops carry anything (a collective is recorded at its API stop, a group end closed at
// its GroupApi stop); beside the interposer Coll/P2p stop means "enqueued", and completion comes
// from the completion tracker.
ncclResult_t StopEvent(void* handle) noexcept {
  if (handle == nullptr || StopProxyHandle(handle)) return ncclSuccess;
  Handle* h = HandleOf(handle);
  if (h == nullptr) return ncclSuccess;
  const Context* c = h->ctx.load(std::memory_order_relaxed);
  if (c != nullptr && c->records) plugin_only::StopHandle(*h);
  return ncclSuccess;
}

ncclResult_t RecordEventState(void* handle, int state, prof_abi::StateArgsV4* /*args*/) noexcept {
  if (handle == nullptr || RecordProxyState(handle, state)) return ncclSuccess;
  if (Handle* g = HandleOfKind(handle, kKindGroup)) plugin_only::RecordGroupState(*g, state);
  return ncclSuccess;
}

// The context stays in the pool: handles of this communicator may still be in NCCL's hands.
ncclResult_t Finalize(void* /*context*/) noexcept {
  return ncclSuccess;
}

MarkerCounts GetMarkerCounts() noexcept {
  MarkerCounts m;
  m.markers = g_markers.load(std::memory_order_relaxed);
  m.unmapped = g_unmapped.load(std::memory_order_relaxed);
  m.p2p = g_p2p_markers.load(std::memory_order_relaxed);
  return m;
}

}  // namespace ncclscope::plugin::profiler
