// Plugin-only recording of AlltoAll, Gather and Scatter as one collective each, as the interposer
// records them, although NCCL 2.28.9 reports them only as their parts.
//
// NCCL 2.28.9 (src/enqueue.cc, taskAppend) appends these calls as point-to-point tasks, one
// p2pTaskAppend per (peer, direction), which rewrites info->coll to Send or Recv before
// ncclProfilerStartP2pApiEvent: the profiler sees only P2pApi events named "Send"/"Recv", with the
// user's count (per peer) and no peer. What tells them apart from the user's own sends is NCCL's
// NVTX range around the API call, pushed before anything else (src/collectives.cc, ncclAlltoAll:
// NVTX3_FUNC_WITH_PARAMS(AlltoAll, ...)) and decoded per thread (nvtx_nccl_payload_calls.h): when
// the thread's innermost NCCL call is an AlltoAll, Gather or Scatter on the part's communicator,
// with bytes = count x type size, the part belongs to that call.
//
// The parts of one call: taskAppend appends, on this rank, 2 x nranks for AlltoAll (Send and Recv
// to each rank, itself included), 1 + nranks for Gather at the root (its own Send, then a Recv
// from each rank) and 1 elsewhere, nranks + 1 for Scatter at the root and 1 elsewhere. They are
// counted on the call's handle (`whole`), which the group handle (the parts' parentObj, one per
// outermost group and thread) points to while parts are still to come; the next call starts a new
// whole. Its record is written when the last part's P2pApi stops (the call is enqueued, as a
// collective's at its CollApi stop), numbered by the communicator's collective counter; its
// device start is its first part's first kernel channel once it is numbered (the start marker of
// profiler_events.cpp, whose owner is then the whole), its device completion the moment all
// remote parts (peer != this rank) launched and every channel of theirs stopped.
//
// The parts to the rank itself (AlltoAll on every rank, Gather and Scatter at the root: a Send
// and a Recv) never count towards the completion, because NCCL gives them no kernel channel
// events and may not launch them at all (src/enqueue.cc):
//   - scheduleP2pTasksToPlan skips a send to self whose buffer is its receive's ("Skip send to
//     self in-place"): both tasks are freed unplanned, no P2p event. That is an in-place AlltoAll
//     (sendbuff == recvbuff), Gather (sendbuff == recvbuff + root x part) or Scatter (recvbuff ==
//     sendbuff + root x part), which the P2pApi events and the NVTX payload cannot tell apart
//     from an out-of-place one: neither carries a buffer.
//   - addP2pToPlan gives a send to self no proxy ops (nProxyOps = selfSend ? 0 : 2), so no
//     profiler proxy op (addProfilerProxyOpIfNeeded) and no KernelCh event, the only source of
//     which is that op's progress (src/transport/profiler.cc, profilerProxyProgress).
// A self part's P2p event, when there is one, is taken as launched and its channels, if any
// report, are left out: the copy to self runs in the same kernel as the remote parts.
//
// Without NCCL's range (NVTX not injected, NCCL_NVTX_DISABLE=1, another NCCL's payload layout) the
// parts stay sends and receives (plugin_only_recorder.h).
#include <cstdint>

#include "plugin/core/probe_clock.h"
#include "plugin/nvtx/nvtx_nccl_payload_calls.h"
#include "plugin/profiler/plugin_only_state.h"
#include "trace/nccl_names.h"
#include "trace/record.h"

namespace ncclscope::plugin::plugin_only {
namespace {

using profiler::Context;
using profiler::Handle;
using profiler::kKindGroup;
using profiler::kKindOp;
using profiler::kStageLaunched;
using profiler::kStageNumbered;
using trace::OpType;

bool RunsAsParts(OpType op) noexcept {
  return op == OpType::kAlltoAll || op == OpType::kGather || op == OpType::kScatter;
}

// How many parts taskAppend appends for the call on this rank (see above).
uint32_t PartsOf(OpType op, const Context& c, int root) noexcept {
  const auto n = static_cast<uint32_t>(c.nranks);
  if (op == OpType::kAlltoAll) return 2 * n;
  return 1 + (c.rank == root ? n : 0);
}

// Of those, the ones whose peer is another rank: all but a Send and a Recv to the rank itself
// where it has them (AlltoAll, and Gather and Scatter at the root).
uint32_t RemotePartsOf(OpType op, const Context& c, int root) noexcept {
  const bool has_self = op == OpType::kAlltoAll || c.rank == root;
  return PartsOf(op, c, root) - (has_self ? 2 : 0);
}

// Whether a launched part's peer is the rank itself (its P2p event stored the peer).
bool ToSelf(const Handle& part, const Context& c) noexcept {
  return part.peer.load(std::memory_order_relaxed) == c.rank;
}

// The collective's handle, started by its first part (whose fields it copies).
Handle* StartWhole(Context& c, const Handle& part, OpType op, int root) noexcept {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  Handle* w = profiler::NewHandle(kKindOp, &c);
  w->group_id.store(part.group_id.load(kRelaxed), kRelaxed);
  w->group_flags.store(part.group_flags.load(kRelaxed), kRelaxed);
  w->op.store(static_cast<uint32_t>(op), kRelaxed);
  w->count.store(part.count.load(kRelaxed), kRelaxed);
  w->dtype.store(part.dtype.load(kRelaxed), kRelaxed);
  w->root.store(op == OpType::kAlltoAll ? -1 : root, kRelaxed);
  w->stream.store(part.stream.load(kRelaxed), kRelaxed);
  w->t_enter_ns.store(part.t_enter_ns.load(kRelaxed), kRelaxed);
  w->tid.store(part.tid.load(kRelaxed), kRelaxed);
  w->tracked.store(part.tracked.load(kRelaxed), kRelaxed);
  w->channels.store(0, kRelaxed);
  w->parts.store(PartsOf(op, c, root), kRelaxed);
  w->remote_parts.store(RemotePartsOf(op, c, root), kRelaxed);
  return w;
}

// Stamps the collective's device completion once every remote part launched and all their
// channels stopped. Launches and stops may come on different threads: both sides add first and
// check after (sequentially consistent), so the last of them sees the totals; `done` makes it
// once.
void TryComplete(Handle& w) noexcept {
  if (w.parts_launched.load() != w.remote_parts.load(std::memory_order_relaxed)) return;
  if (w.stopped.load() != w.channels.load()) return;
  if (!w.tracked.load(std::memory_order_relaxed) ||
      w.stage.load(std::memory_order_acquire) != kStageNumbered) {
    return;
  }
  if (!w.done.exchange(true)) CompleteDeviceOf(w);
}

Handle* WholeOf(const Handle& part) noexcept {
  return part.whole.load(std::memory_order_acquire);
}

}  // namespace

void JoinWhole(Context& c, const void* group, Handle& part) noexcept {
  Handle* g = profiler::HandleOfKind(group, kKindGroup);
  if (g == nullptr) return;
  NcclCallArgs a;
  if (!CurrentNcclCallArgs(&a) || !RunsAsParts(a.op) || a.comm_hash != c.comm_id) return;
  const int32_t dtype = part.dtype.load(std::memory_order_relaxed);
  const int size = dtype >= 0 ? trace::DataTypeSize(dtype) : 0;
  if (size > 0 && a.bytes != part.count.load(std::memory_order_relaxed) * size) return;
  Handle* w = g->whole.load(std::memory_order_relaxed);
  // A new call unless the group's current one is the same call and still expects parts.
  if (w == nullptr || w->ctx.load(std::memory_order_relaxed) != &c ||
      w->op.load(std::memory_order_relaxed) != static_cast<uint32_t>(a.op) ||
      w->parts_joined.load(std::memory_order_relaxed) >= w->parts.load(std::memory_order_relaxed)) {
    w = StartWhole(c, part, a.op, a.root);
    g->whole.store(w, std::memory_order_relaxed);
  }
  w->parts_joined.fetch_add(1, std::memory_order_relaxed);
  part.tracked.store(false, std::memory_order_relaxed);
  part.whole.store(w, std::memory_order_release);
}

bool PartStopped(Handle& part) noexcept {
  Handle* w = WholeOf(part);
  if (w == nullptr) return false;
  Context* c = w->ctx.load(std::memory_order_relaxed);
  if (c != nullptr && w->parts_stopped.fetch_add(1, std::memory_order_relaxed) + 1 ==
                          w->parts.load(std::memory_order_relaxed)) {
    w->t_exit_ns.store(ProbeNowNs(), std::memory_order_relaxed);
    // The reduction op: none of these three has one.
    WriteRecord(*w, *c, NextCollSeq(*c), -1);
    w->stage.store(kStageNumbered, std::memory_order_release);
  }
  return true;
}

bool PartLaunched(Handle& part, uint8_t channels) noexcept {
  Handle* w = WholeOf(part);
  if (w == nullptr) return false;
  const uint32_t n = channels != 0 ? channels : 1;
  part.channels.store(n, std::memory_order_relaxed);
  part.stage.store(kStageLaunched, std::memory_order_release);
  const Context* c = w->ctx.load(std::memory_order_relaxed);
  if (c == nullptr || ToSelf(part, *c)) return true;
  w->channels.fetch_add(n);
  w->parts_launched.fetch_add(1);
  TryComplete(*w);
  return true;
}

bool PartChannelStopped(const Handle& part) noexcept {
  Handle* w = WholeOf(part);
  if (w == nullptr) return false;
  const Context* c = w->ctx.load(std::memory_order_relaxed);
  if (c == nullptr || ToSelf(part, *c)) return true;
  w->stopped.fetch_add(1);
  TryComplete(*w);
  return true;
}

}  // namespace ncclscope::plugin::plugin_only
