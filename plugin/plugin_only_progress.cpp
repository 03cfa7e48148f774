// Plugin-only recording of NCCL's proxy progress and kernel channels, as the interposed mode keeps
// them (proxy_progress.h, whose pools and background publishing both modes share): ProxyOp,
// ProxyStep and KernelCh handles are proxy_progress.h's, known by the identity of the operation's
// record. A part of an AlltoAll, Gather or Scatter (its own P2p event, named Send or Recv) is
// known by the whole call's number and OpType, as the interposed mode numbers it, so a stall stage
// names the call the user made.
#include "plugin/plugin_only_recorder.h"
#include "plugin/plugin_only_state.h"
#include "plugin/proxy_progress.h"
#include "trace/record.h"

namespace ncclscope::plugin::plugin_only {
namespace {

// The operation's identity in the records: a part takes its whole call's number and OpType, and
// keeps its own peer, as an interposed part's P2p handle does (profiler_plugin.cpp, kP2p); a
// collective has no peer.
profiler::OperationIdentity IdentityOf(const Handle& h, const Comm& c) noexcept {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  profiler::OperationIdentity who;
  who.comm_id = c.id;
  const Handle* w = h.whole.load(std::memory_order_acquire);
  const Handle& named = w != nullptr ? *w : h;
  who.seq = named.seq.load(kRelaxed);
  who.op = named.op.load(kRelaxed);
  const auto own_op = static_cast<trace::OpType>(h.op.load(kRelaxed));
  who.peer = trace::IsP2P(own_op) ? h.peer.load(kRelaxed) : -1;
  return who;
}

void KernelChannelStopped(void* owner) noexcept {
  OnKernelChannelStop(*static_cast<Handle*>(owner));
}

}  // namespace

void* StartProxyOp(Comm& c, const void* parent, const prof_abi::ProxyOpV4& d) noexcept {
  // PXN: another process's op, whose parent may well fall inside our pool's addresses.
  if (!profiler::IsOwnProxyOp(d)) return nullptr;
  Handle* h = HandleOfKind(parent, kKindOp);
  if (h == nullptr || h->comm.load(std::memory_order_relaxed) != &c ||
      h->stage.load(std::memory_order_acquire) != kStageLaunched) {
    return nullptr;
  }
  return profiler::StartProxyOpFor(IdentityOf(*h, c), d);
}

void* StartKernelChannel(Handle& h, uint8_t channel) noexcept {
  return profiler::StartKernelCh(h.kernel_channels, channel, KernelChannelStopped, &h);
}

void PublishChannels(trace::RingWriter& ring, int64_t now_ns) noexcept {
  Handle* pool = HandlePool();
  if (pool == nullptr) return;
  for (uint32_t i = 0; i < kHandlePoolSize; ++i) {
    Handle& h = pool[i];
    if (h.kernel_channels.started.load(std::memory_order_acquire) == 0) continue;
    const Comm* c = h.comm.load(std::memory_order_relaxed);
    if (c == nullptr) continue;
    profiler::PublishChannelBits(ring, h.kernel_channels, IdentityOf(h, *c), now_ns);
  }
}

}  // namespace ncclscope::plugin::plugin_only
