// One NCCL profiler event as ncclscope reads it, whatever table version reported it. Each exported
// table (profiler_v4.cpp, profiler_v5.cpp) copies the fields we read out of its version's
// descriptor into an Event and hands it to StartEvent, the one event path: versions differ only
// in that translation, as NCCL's own adapters map an old plugin's descriptor onto its internal
// one (NVIDIA/nccl v2.28.9-1, src/plugin/profiler/profiler_v4.cc).
#pragma once

#include <cstddef>
#include <cstdint>

#include <nccl.h>

#include "plugin/core/profiler_abi.h"

namespace ncclscope::plugin::profiler {

struct Event {
  enum Kind : uint8_t {
    kOther = 0,  // a kind we never ask for (ProxyCtrl, NetPlugin, KernelLaunch, ...)
    kGroup,      // v5 GroupApi (groupDepth > 1 is the user's group) or v4 Group
    kCollApi,    // v5+: the collective call, on the calling thread inside it
    kP2pApi,     // v5+: one part (peer, direction) of a point-to-point call, no peer
    kColl,       // at launch: a collective's task
    kP2p,        // at launch: a send/recv part, with its peer
    kKernelCh,
    kProxyOp,
    kProxyStep,
  };
  Kind kind = kOther;
  // v5+: a Coll/P2p event's parent is its CollApi/P2pApi event. v4 has no API events: its Coll
  // and P2p events carry the call's arguments instead, their parent being the Group event.
  bool has_api = false;
  const void* parent = nullptr;
  int group_depth = 0;  // GroupApi; a v4 Group has none (0)

  // The call: CollApi/P2pApi (v5), and Coll/P2p (v4 always; v5 what NCCL copies into the task).
  const char* func = nullptr;
  size_t count = 0;
  const char* datatype = nullptr;
  int root = -1;
  void* stream = nullptr;  // v5 API events
  bool graph_captured = false;
  const void* send_buff = nullptr;  // Coll: sendBuff; P2p: its one buffer
  const void* recv_buff = nullptr;  // Coll: recvBuff

  // The launch (Coll/P2p).
  uint64_t nccl_seq = 0;  // Coll: NCCL's per-function seqNumber
  uint8_t channels = 0;   // nChannels
  int peer = -1;          // P2p

  // KernelCh.
  uint8_t channel = 0;
  uint64_t gpu_ns = 0;  // pTimer: the GPU's clock

  // ProxyOp (its layout is the same from v4 on), ProxyStep.
  const prof_abi::ProxyOpV4* proxy_op = nullptr;
  int step = 0;
};

// The event types every table version describes alike (Coll, P2p, KernelCh, ProxyOp, ProxyStep:
// the same members under the same names in the v4 and v5 descriptors) into *e. False for another
// type, which the version's own adapter reads.
template <typename Descr>
bool ReadSharedKinds(const Descr& d, Event* e) noexcept {
  switch (d.type) {
    case prof_abi::kColl:
      e->kind = Event::kColl;
      e->func = d.coll.func;
      e->count = d.coll.count;
      e->datatype = d.coll.datatype;
      e->root = d.coll.root;
      e->send_buff = d.coll.sendBuff;
      e->recv_buff = d.coll.recvBuff;
      e->nccl_seq = d.coll.seqNumber;
      e->channels = d.coll.nChannels;
      return true;
    case prof_abi::kP2p:
      e->kind = Event::kP2p;
      e->func = d.p2p.func;
      e->count = d.p2p.count;
      e->datatype = d.p2p.datatype;
      e->send_buff = d.p2p.buff;
      e->peer = d.p2p.peer;
      e->channels = d.p2p.nChannels;
      return true;
    case prof_abi::kKernelCh:
      e->kind = Event::kKernelCh;
      e->channel = d.kernelCh.channelId;
      e->gpu_ns = d.kernelCh.pTimer;
      return true;
    case prof_abi::kProxyOp:
      e->kind = Event::kProxyOp;
      e->proxy_op = &d.proxyOp;
      return true;
    case prof_abi::kProxyStep:
      e->kind = Event::kProxyStep;
      e->step = d.proxyStep.step;
      return true;
    default:
      return false;
  }
}

// The one event path behind every table's startEvent (profiler_plugin.cpp). Thread-safe as NCCL
// calls it; noexcept, lock-free, allocation-free. *handle is set (null for events we do not
// follow) whenever handle is not null.
ncclResult_t StartEvent(void* context, void** handle, const Event& e) noexcept;

// Start markers the event path wrote (device_start and p2p_device_start), of which without a
// sequence number, and of which p2p_device_start. Thread-safe.
struct MarkerCounts {
  uint64_t markers = 0;
  uint64_t unmapped = 0;
  uint64_t p2p = 0;
};
MarkerCounts GetMarkerCounts() noexcept;

}  // namespace ncclscope::plugin::profiler
