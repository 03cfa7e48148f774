#include "plugin/profiler/proxy_progress.h"

#include <unistd.h>

#include "plugin/core/probe_clock.h"
#include "plugin/profiler/profiler_handles.h"
#include "plugin/profiler/profiler_plugin.h"
#include "trace/record.h"

namespace ncclscope::plugin::profiler {
namespace {

// Tags ("ncscPOP1", "ncscPST1", "ncscKCH1" read as little-endian words).
constexpr uint64_t kTagProxyOp = 0x31504f50'6373636eULL;
constexpr uint64_t kTagProxyStep = 0x31545350'6373636eULL;
constexpr uint64_t kTagKernelCh = 0x3148434b'6373636eULL;
constexpr uint64_t kTagKernelChClaimed = kTagKernelCh ^ 1;  // being filled in: no event reads it
// A slot still busy is skipped; after this many busy slots in a row the event is not tracked.
constexpr uint32_t kMaxProbes = 16;

// NCCL's step states (src/include/plugin/profiler/profiler_v4.h, values stable across versions).
constexpr int kSendGpuWait = 8;
constexpr int kSendWait = 9;
constexpr int kRecvWait = 10;
constexpr int kRecvFlushWait = 11;
constexpr int kRecvGpuWait = 12;
constexpr int kSendPeerWait = 20;

ProxyOpSlot g_ops[kProxyOpPoolSize];
KernelChSlot g_kernel_ch[kKernelChPoolSize];
std::atomic<uint64_t> g_next_op{0};
std::atomic<uint64_t> g_next_kernel_ch{0};
std::atomic<int> g_pid{0};

struct StepArraysLinked {
  StepArraysLinked() noexcept {
    for (ProxyOpSlot& s : g_ops) {
      for (ProxyStepSlot& st : s.steps) st.op = &s;
    }
  }
};
const StepArraysLinked g_linked;

template <typename T, size_t N>
T* InPoolOf(T (&pool)[N], const void* p) noexcept {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  const auto lo = reinterpret_cast<uintptr_t>(&pool[0]);
  if (addr < lo || addr >= lo + sizeof(pool) || (addr - lo) % sizeof(T) != 0) return nullptr;
  return &pool[(addr - lo) / sizeof(T)];
}

ProxyStepSlot* StepOf(const void* p) noexcept {
  // A step handle lies inside an op slot's array: find the slot, then the element.
  const auto addr = reinterpret_cast<uintptr_t>(p);
  const auto lo = reinterpret_cast<uintptr_t>(&g_ops[0]);
  if (addr < lo || addr >= lo + sizeof(g_ops)) return nullptr;
  ProxyOpSlot& slot = g_ops[(addr - lo) / sizeof(ProxyOpSlot)];
  ProxyStepSlot* st = InPoolOf(slot.steps, p);
  return st != nullptr && st->tag.load(std::memory_order_acquire) == kTagProxyStep ? st : nullptr;
}

ProxyOpSlot* OpOf(const void* p) noexcept {
  ProxyOpSlot* s = InPoolOf(g_ops, p);
  return s != nullptr && s->tag.load(std::memory_order_acquire) == kTagProxyOp ? s : nullptr;
}

KernelChSlot* KernelChOf(const void* p) noexcept {
  KernelChSlot* s = InPoolOf(g_kernel_ch, p);
  return s != nullptr && s->tag.load(std::memory_order_acquire) == kTagKernelCh ? s : nullptr;
}

// Our pid, read once (getpid is a system call). A forked child has no NCCL proxy of its parent's.
int OwnPid() noexcept {
  int pid = g_pid.load(std::memory_order_relaxed);
  if (__builtin_expect(pid == 0, 0)) {
    pid = static_cast<int>(getpid());
    g_pid.store(pid, std::memory_order_relaxed);
  }
  return pid;
}

ProxyOpSlot* ClaimOpSlot() noexcept {
  for (uint32_t k = 0; k < kMaxProbes; ++k) {
    const uint64_t i = g_next_op.fetch_add(1, std::memory_order_relaxed);
    ProxyOpSlot& s = g_ops[i & (kProxyOpPoolSize - 1)];
    uint32_t idle = 0;
    if (s.busy.compare_exchange_strong(idle, 1, std::memory_order_acq_rel)) return &s;
  }
  return nullptr;
}

// A slot whose channel has stopped (tag 0), so that a long-running kernel's channel keeps its
// slot while thousands of others come and go: its KernelChStop must reach its own operation, or
// that operation never completes in the records and reads as hung. When kMaxProbes slots in a row
// are still open (hung kernels), the next one is taken anyway: NCCL must get a handle, and a
// channel without one would never complete its operation either.
KernelChSlot& ClaimKernelChSlot() noexcept {
  KernelChSlot* fallback = nullptr;
  for (uint32_t k = 0; k < kMaxProbes; ++k) {
    const uint64_t i = g_next_kernel_ch.fetch_add(1, std::memory_order_relaxed);
    KernelChSlot& s = g_kernel_ch[i & (kKernelChPoolSize - 1)];
    if (fallback == nullptr) fallback = &s;
    uint64_t free_tag = 0;
    if (s.tag.compare_exchange_strong(free_tag, kTagKernelChClaimed, std::memory_order_acq_rel)) {
      return s;
    }
  }
  fallback->tag.store(kTagKernelChClaimed, std::memory_order_relaxed);
  return *fallback;
}

void SetStepState(ProxyStepSlot& st, int state) noexcept {
  const auto s = static_cast<uint32_t>(state);
  // SendPeerWait is recorded again at every poll: only a change of state moves its time.
  if (st.state.load(std::memory_order_relaxed) == s) return;
  st.state_since.store(ProbeNowNs(), std::memory_order_relaxed);
  st.state.store(s, std::memory_order_release);
  ProxyOpSlot& op = *st.op;
  if (state == kSendWait || state == kRecvWait) {
    op.sent.fetch_add(1, std::memory_order_relaxed);
  } else if (state == kRecvFlushWait) {
    op.received.fetch_add(1, std::memory_order_relaxed);
  }
}

// What a reader of the ring needs of one proxy op, and a key that changes when any of it does.
struct OpView {
  uint32_t posted, sent, received, done, state;
  int64_t since;
  uint64_t Key() const {
    uint64_t k = posted;
    for (const uint64_t v : {uint64_t{sent}, uint64_t{received}, uint64_t{done}, uint64_t{state}})
      k = k * 0x9E3779B97F4A7C15ULL + v;
    return k;
  }
};

OpView ViewOf(const ProxyOpSlot& s) noexcept {
  OpView v{};
  v.done = s.done.load(std::memory_order_acquire);
  v.posted = s.posted.load(std::memory_order_relaxed);
  v.sent = s.sent.load(std::memory_order_relaxed);
  v.received = s.received.load(std::memory_order_relaxed);
  // Steps end in order, so the oldest step not done is number `done`, in slot done % 8.
  const ProxyStepSlot& st = s.steps[v.done % kStepsPerOp];
  if (v.done < v.posted && st.step.load(std::memory_order_relaxed) == v.done) {
    v.state = st.state.load(std::memory_order_acquire);
    v.since = st.state_since.load(std::memory_order_relaxed);
  }
  return v;
}

void WriteOp(trace::RingWriter& ring, const ProxyOpSlot& s, const OpView& v, bool ended,
             int64_t now) noexcept {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  trace::RecordData d{};
  d.op = static_cast<uint32_t>(trace::OpType::kProxyProgress);
  d.comm_id = s.comm_id.load(kRelaxed);
  d.seq = s.seq.load(kRelaxed);
  d.t_enter_ns = now;
  d.t_exit_ns = now;
  d.t_device_done_ns = trace::kDoneUntracked;
  d.peer = s.peer.load(kRelaxed);
  d.dtype = static_cast<int32_t>(s.channel.load(kRelaxed));
  d.redop = static_cast<int32_t>(v.state);
  d.group_id = static_cast<uint64_t>(v.since);
  d.count = uint64_t{v.posted} << 32 | v.done;
  d.aux = uint64_t{v.sent} << 32 | v.received;
  const uint64_t n = s.n_steps.load(kRelaxed);
  const uint64_t steps = n > 0xFFFFFF ? 0xFFFFFF : n;
  d.stream = (s.is_send.load(kRelaxed) != 0 ? trace::kProxySend : 0) |
             (ended ? trace::kProxyEnded : 0) | steps << 8 | uint64_t{s.op.load(kRelaxed)} << 32;
  ring.Append(d, false);
}

void WriteChannels(trace::RingWriter& ring, const OperationIdentity& who, uint64_t started,
                   uint64_t stopped, int64_t now) noexcept {
  trace::RecordData d{};
  d.op = static_cast<uint32_t>(trace::OpType::kKernelChannels);
  d.comm_id = who.comm_id;
  d.seq = who.seq;
  d.t_enter_ns = now;
  d.t_exit_ns = now;
  d.t_device_done_ns = trace::kDoneUntracked;
  d.peer = who.peer;
  d.dtype = -1;
  d.redop = -1;
  d.stream = uint64_t{who.op} << 32;
  d.aux = started;
  d.count = stopped;
  ring.Append(d, false);
}

void PublishOps(trace::RingWriter& ring, int64_t now) noexcept {
  for (ProxyOpSlot& s : g_ops) {
    if (s.busy.load(std::memory_order_acquire) == 0) continue;
    const bool ended = s.ended.load(std::memory_order_acquire) != 0;
    const bool published = s.published.load(std::memory_order_relaxed) != 0;
    if (ended) {
      // Its last state, once, for a reader that saw it in flight; then the slot is free again.
      if (published) WriteOp(ring, s, ViewOf(s), true, now);
      s.published.store(0, std::memory_order_relaxed);
      s.ticks_seen.store(0, std::memory_order_relaxed);
      s.busy.store(0, std::memory_order_release);
      continue;
    }
    // Seen for the first time at this tick: it may well end before the next.
    if (s.ticks_seen.fetch_add(1, std::memory_order_relaxed) == 0) continue;
    const OpView v = ViewOf(s);
    const uint64_t key = v.Key();
    if (published && s.published_key.load(std::memory_order_relaxed) == key) continue;
    WriteOp(ring, s, v, false, now);
    s.published_key.store(key, std::memory_order_relaxed);
    s.published.store(1, std::memory_order_relaxed);
  }
}

void PublishChannels(trace::RingWriter& ring, int64_t now) noexcept {
  Handle* pool = HandlePool();
  if (pool == nullptr) return;
  for (uint32_t i = 0; i < kHandlePoolSize; ++i) {
    Handle& h = pool[i];
    if (h.kernel_channels.started.load(std::memory_order_acquire) == 0) continue;
    const Context* c = h.ctx.load(std::memory_order_relaxed);
    if (c == nullptr) continue;
    PublishChannelBits(ring, h.kernel_channels, IdentityOf(h, *c), now);
  }
}

}  // namespace

bool IsOwnProxyOp(const prof_abi::ProxyOpV4& d) noexcept {
  return d.pid == OwnPid();
}

void* StartProxyOpFor(const OperationIdentity& who, const prof_abi::ProxyOpV4& d) noexcept {
  ProxyOpSlot* s = ClaimOpSlot();
  if (s == nullptr) return nullptr;
  constexpr auto kRelaxed = std::memory_order_relaxed;
  s->tag.store(0, kRelaxed);
  s->comm_id.store(who.comm_id, kRelaxed);
  s->seq.store(who.seq, kRelaxed);
  s->op.store(who.op, kRelaxed);
  s->peer.store(d.peer, kRelaxed);
  s->channel.store(d.channelId, kRelaxed);
  s->is_send.store(d.isSend != 0 ? 1 : 0, kRelaxed);
  s->n_steps.store(d.nSteps > 0 ? static_cast<uint32_t>(d.nSteps) : 0, kRelaxed);
  s->ticks_seen.store(0, kRelaxed);
  s->published.store(0, kRelaxed);
  s->posted.store(0, std::memory_order_relaxed);
  s->sent.store(0, std::memory_order_relaxed);
  s->received.store(0, std::memory_order_relaxed);
  s->done.store(0, std::memory_order_relaxed);
  s->ended.store(0, std::memory_order_relaxed);
  for (ProxyStepSlot& st : s->steps) st.tag.store(0, std::memory_order_relaxed);
  s->tag.store(kTagProxyOp, std::memory_order_release);
  return s;
}

void* StartProxyStep(const void* parent, int step) noexcept {
  ProxyOpSlot* op = OpOf(parent);
  if (op == nullptr || step < 0) return nullptr;
  ProxyStepSlot& st = op->steps[static_cast<uint32_t>(step) % kStepsPerOp];
  st.step.store(static_cast<uint32_t>(step), std::memory_order_relaxed);
  st.state_since.store(ProbeNowNs(), std::memory_order_relaxed);
  st.state.store(0, std::memory_order_relaxed);
  st.tag.store(kTagProxyStep, std::memory_order_release);
  op->posted.fetch_add(1, std::memory_order_release);
  return &st;
}

void* StartKernelCh(KernelChannelBits& bits, uint8_t channel, KernelChStopHook on_stop,
                    void* owner) noexcept {
  bits.started.fetch_or(uint64_t{1} << (channel & 63), std::memory_order_release);
  KernelChSlot& k = ClaimKernelChSlot();
  k.bits.store(&bits, std::memory_order_relaxed);
  k.channel.store(channel, std::memory_order_relaxed);
  k.on_stop.store(on_stop, std::memory_order_relaxed);
  k.owner.store(owner, std::memory_order_relaxed);
  k.tag.store(kTagKernelCh, std::memory_order_release);
  return &k;
}

bool RecordProxyState(void* handle, int state) noexcept {
  if (ProxyStepSlot* st = StepOf(handle)) {
    if (state == kSendGpuWait || state == kSendPeerWait || state == kSendWait ||
        state == kRecvWait || state == kRecvFlushWait || state == kRecvGpuWait) {
      SetStepState(*st, state);
    }
    return true;
  }
  if (KernelChSlot* k = KernelChOf(handle)) {
    if (state == prof_abi::kStateKernelChStop) {
      KernelChannelBits* bits = k->bits.load(std::memory_order_relaxed);
      const uint32_t ch = k->channel.load(std::memory_order_relaxed);
      if (bits != nullptr)
        bits->stopped.fetch_or(uint64_t{1} << (ch & 63), std::memory_order_release);
      if (KernelChStopHook hook = k->on_stop.load(std::memory_order_relaxed)) {
        hook(k->owner.load(std::memory_order_relaxed));
      }
    }
    return true;
  }
  return OpOf(handle) != nullptr;  // ProxyOpInProgress: nothing to keep
}

bool StopProxyHandle(void* handle) noexcept {
  if (ProxyStepSlot* st = StepOf(handle)) {
    st->tag.store(0, std::memory_order_relaxed);
    st->op->done.fetch_add(1, std::memory_order_release);
    return true;
  }
  if (ProxyOpSlot* op = OpOf(handle)) {
    op->tag.store(0, std::memory_order_relaxed);
    op->ended.store(1, std::memory_order_release);
    // Never published: nobody needs its end, the slot is free at once. Otherwise the background
    // thread frees it after writing its final record.
    if (op->published.load(std::memory_order_acquire) == 0) {
      op->busy.store(0, std::memory_order_release);
    }
    return true;
  }
  if (KernelChSlot* k = KernelChOf(handle)) {
    k->tag.store(0, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void PublishProgress(trace::RingWriter& ring, int64_t now_ns) noexcept {
  if (!AnyContext()) return;
  PublishOps(ring, now_ns);
  PublishChannels(ring, now_ns);
}

void PublishChannelBits(trace::RingWriter& ring, KernelChannelBits& bits,
                        const OperationIdentity& who, int64_t now_ns) noexcept {
  const uint64_t started = bits.started.load(std::memory_order_acquire);
  if (started == 0) return;
  const uint64_t stopped = bits.stopped.load(std::memory_order_acquire);
  const uint64_t pub_started = bits.published_started.load(std::memory_order_relaxed);
  const uint64_t pub_stopped = bits.published_stopped.load(std::memory_order_relaxed);
  if (started == pub_started && stopped == pub_stopped) return;
  const bool was_published = pub_started != 0;
  if ((stopped & started) == started && !was_published) return;  // ended between two ticks
  if (!was_published && bits.ticks_seen.fetch_add(1, std::memory_order_relaxed) == 0) return;
  WriteChannels(ring, who, started, stopped, now_ns);
  bits.published_started.store(started, std::memory_order_relaxed);
  bits.published_stopped.store(stopped, std::memory_order_relaxed);
}

}  // namespace ncclscope::plugin::profiler
