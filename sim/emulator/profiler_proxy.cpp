#include "sim/emulator/profiler_proxy.h"

#include <algorithm>

#include "sim/emulator/backoff_wait.h"
#include "sim/emulator/comm.h"
#include "sim/emulator/profiler_dispatch.h"
#include "sim/emulator/profiler_task_order.h"
#include "sim/emulator/proxy_thread.h"

namespace ncclsim {
namespace {

namespace ab = profabi;

constexpr int kDeviceOrProxy =
    ab::kEvKernelCh | ab::kEvProxyOp | ab::kEvProxyStep | ab::kEvNetPlugin;
// ncclProfilerStartProxyOpEvent / Start*ProxyStepEvent test these.
constexpr int kProxyOpMask = ab::kEvProxyOp | ab::kEvProxyStep | ab::kEvNetPlugin;
constexpr int kProxyStepMask = ab::kEvProxyStep | ab::kEvNetPlugin;

void* contextOf(const OpDesc& d) {
  return d.comm->profiler->ctx;
}

// The task whose data a flow carries: the collective's only task, or the send (receive) task
// of that peer.
int taskOf(const ProfOp& op, bool send, int peer) {
  for (size_t i = 0; i < op.tasks.size(); ++i) {
    const ProfTask& t = op.tasks[i];
    if (!t.p2p) return int(i);
    if (t.send == send && t.peer == peer && !t.dropped) return int(i);
  }
  return -1;
}

}  // namespace

std::unique_ptr<ProxyTracker> ProxyTracker::make(const OpDesc& d, const OpPlan& p) {
  if (d.prof == nullptr || !d.comm->profiler->live.load(std::memory_order_acquire)) return nullptr;
  bool wanted = false;
  for (const ProfTask& t : d.prof->tasks) wanted |= (t.mask & kDeviceOrProxy) != 0;
  if (!wanted) return nullptr;
  return std::unique_ptr<ProxyTracker>(new ProxyTracker(d, p));
}

ProxyTracker::ProxyTracker(const OpDesc& d, const OpPlan& p) : d_(d), channels_(prof::channels()) {
  out_flows_.resize(p.outs.size());
  in_flows_.resize(p.ins.size());
  const auto& tasks = d_.prof->tasks;
  // KernelCh events follow the tasks' order in the plan: a collective's one task, or the sends
  // and receives in p2p schedule rounds (profiler_task_order.h).
  std::vector<bool> send;
  std::vector<int> peer;
  for (const ProfTask& t : tasks) {
    send.push_back(t.send);
    peer.push_back(t.p2p ? t.peer : 0);
  }
  for (const size_t t : p2pPlanOrder(d_.comm->rank, d_.comm->nranks, send, peer)) {
    if (tasks[t].dropped) continue;
    // A part to the rank itself has no KernelCh events in NCCL 2.28.9: they come only from the
    // profiler proxy op of a task's proxy ops (src/transport/profiler.cc profilerProxyProgress, the
    // one caller of ncclProfilerStartKernelChEvent), and a self part has none (src/enqueue.cc
    // addP2pToPlan: nProxyOps = selfSend ? 0 : 2).
    if (tasks[t].p2p && tasks[t].peer == d_.comm->rank) continue;
    for (int c = 0; c < channels_; ++c) kernels_.push_back(Kernel{int(t), c});
  }
  for (size_t i = 0; i < p.outs.size(); ++i) {
    const int peer = p.outs[i].peer;
    addFlow(taskOf(*d_.prof, true, peer), true, i, peer, p.outs[i].total);
  }
  for (size_t i = 0; i < p.ins.size(); ++i) {
    const int peer = p.ins[i].peer;
    addFlow(taskOf(*d_.prof, false, peer), false, i, peer, p.ins[i].want0 + p.ins[i].want1);
  }
  for (Kernel& k : kernels_) {
    for (const Op& op : ops_) k.open_ops += op.task == k.task && op.channel == k.channel;
  }
  for (Flow& f : out_flows_) {
    if (!f.ops.empty()) f.next_boundary = ops_[f.ops[0]].steps[0].end;
  }
}

size_t ProxyTracker::stepBegin(const Op& op, int k) {
  return k == 0 ? op.lo : op.steps[k - 1].end;
}

size_t ProxyTracker::stepBytes(const Op& op, int k) {
  return (op.steps[k].end - stepBegin(op, k)) * op.elem_size;
}

// The flow's elements are split evenly over the channels; each share into at most
// kMaxStepsPerChannel steps of equal size (the last may be short).
void ProxyTracker::addFlow(int task, bool send, size_t flow, int peer, size_t elems) {
  // A rank's transfers to itself never reach a proxy (no network connection to self); they
  // still count towards the kernel's channels through the operation's end.
  if (task < 0 || peer == d_.comm->rank) return;
  const ProfTask& t = d_.prof->tasks[size_t(task)];
  Flow& f = (send ? out_flows_ : in_flows_)[flow];
  for (int c = 0; c < channels_; ++c) {
    const size_t lo = elems * size_t(c) / size_t(channels_);
    const size_t hi = elems * size_t(c + 1) / size_t(channels_);
    if (hi == lo) continue;
    Op op;
    op.task = task;
    op.channel = c;
    op.send = send;
    op.flow = flow;
    op.peer = peer;
    op.lo = lo;
    op.elem_size = d_.kind == OpKind::kSend || d_.kind == OpKind::kRecv ? 1 : dtypeSize(d_.dtype);
    const size_t step = (hi - lo + kMaxStepsPerChannel - 1) / kMaxStepsPerChannel;
    op.nsteps = int((hi - lo + step - 1) / step);
    for (int k = 0; k < op.nsteps; ++k) op.steps[k].end = std::min(hi, lo + step * size_t(k + 1));
    op.emit_op = (t.mask & kProxyOpMask) != 0;
    op.emit_steps = (t.mask & kProxyStepMask) != 0;
    f.ops.push_back(ops_.size());
    ops_.push_back(op);
  }
}

bool ProxyTracker::live() const {
  return d_.comm->profiler->live.load(std::memory_order_acquire);
}

void ProxyTracker::launch() {
  const bool any = std::any_of(ops_.begin(), ops_.end(), [](const Op& op) { return op.emit_op; });
  if (!any || !live()) {
    appended_.store(true, std::memory_order_release);
    return;
  }
  proxyPost(&ProxyTracker::appendOnProxyThread, this);
}

void ProxyTracker::appendOnProxyThread(void* self) {
  static_cast<ProxyTracker*>(self)->append();
}

// ProxyAppend starts each ProxyOp; the progress function's first pass marks it in progress and
// posts its steps (at most NCCL_STEPS = 8 ahead, so all of ours): sends wait for the GPU's data,
// receives for the network's. None of this waits for the kernel.
void ProxyTracker::append() {
  if (live()) {
    void* ctx = contextOf(d_);
    const auto& tasks = d_.prof->tasks;
    for (Op& op : ops_) {
      if (!op.emit_op) continue;
      const ProfTask& t = tasks[size_t(op.task)];
      ab::Descr5 e{};
      e.type = ab::kEvProxyOp;
      e.parentObj = t.event;
      e.rank = d_.comm->rank;
      e.proxyOp.pid = prof::pid();
      e.proxyOp.channelId = uint8_t(op.channel);
      e.proxyOp.peer = op.peer;
      e.proxyOp.nSteps = op.nsteps;
      e.proxyOp.chunkSize = int(stepBytes(op, 0));
      e.proxyOp.isSend = op.send ? 1 : 0;
      prof::start(ctx, &op.handle, &e);
    }
    for (Op& op : ops_) {
      if (op.handle != nullptr) prof::record(op.handle, ab::kStateProxyOpInProgress, nullptr);
    }
    for (Op& op : ops_) {
      if (!op.emit_steps || op.handle == nullptr) continue;
      for (int k = 0; k < op.nsteps; ++k) {
        ab::Descr5 e{};
        e.type = ab::kEvProxyStep;
        e.parentObj = op.handle;
        e.rank = d_.comm->rank;
        e.proxyStep.step = k;
        prof::start(ctx, &op.steps[k].handle, &e);
        recordStep(&op, k, op.send ? ab::kStateSendGPUWait : ab::kStateRecvWait, op.trans);
      }
    }
  }
  // The last touch of this tracker on the proxy thread: end() may destroy it right after.
  appended_.store(true, std::memory_order_release);
}

void ProxyTracker::begin() {
  if (!live()) return;
  void* ctx = contextOf(d_);
  const auto& tasks = d_.prof->tasks;
  // The kernel starts on every channel (ncclProfilerStartKernelChEvent).
  for (Kernel& k : kernels_) {
    const ProfTask& t = tasks[size_t(k.task)];
    if ((t.mask & ab::kEvKernelCh) == 0) continue;
    ab::Descr5 e{};
    e.type = ab::kEvKernelCh;
    e.parentObj = t.event;
    e.kernelCh = {uint8_t(k.channel), prof::gpuTimerNs()};
    prof::start(ctx, &k.handle, &e);
    k.open = true;
  }
}

void ProxyTracker::recordStep(Op* op, int k, int state, size_t trans) {
  op->steps[k].state = state;
  if (op->steps[k].handle == nullptr) return;
  ab::StateArgs a{};
  a.proxyStep.transSize = trans;
  prof::record(op->steps[k].handle, state, &a);
}

void ProxyTracker::stopStep(Op* op, int k) {
  op->steps[k].state = -1;
  prof::stop(op->steps[k].handle);
  op->steps[k].handle = nullptr;
  if (++op->first_open == op->nsteps) opDone(op);
}

// The op's last step is done: the ProxyOp stops, and a channel whose every ProxyOp of the task
// has stopped has finished its share of the kernel.
void ProxyTracker::opDone(Op* op) {
  prof::stop(op->handle);
  op->handle = nullptr;
  for (Kernel& k : kernels_) {
    if (k.task != op->task || k.channel != op->channel || --k.open_ops != 0 || !k.open) continue;
    ab::StateArgs a{};
    a.kernelCh.pTimer = prof::gpuTimerNs();
    prof::record(k.handle, ab::kStateKernelChStop, &a);
    prof::stop(k.handle);
    k.open = false;
    k.handle = nullptr;
  }
}

void ProxyTracker::markPushed(Flow* f, size_t sent, uint64_t head) {
  f->next_boundary = SIZE_MAX;
  for (size_t i : f->ops) {
    Op& op = ops_[i];
    for (int k = 0; k < op.nsteps; ++k) {
      Step& s = op.steps[k];
      if (s.end_head != 0) continue;
      if (s.end <= sent) {
        s.end_head = head;
      } else {
        f->next_boundary = s.end;
        return;
      }
    }
  }
}

void ProxyTracker::update(const OpPlan& p) {
  // Before the proxy thread has posted the steps there is nothing to move on; the states the
  // flows reached meanwhile are caught up with at the next pass.
  if (!appended_.load(std::memory_order_acquire) || !live()) return;
  const Comm* c = d_.comm;
  for (Op& op : ops_) {
    if (op.first_open == op.nsteps) continue;
    if (op.send) {
      const OutFlow& f = p.outs[op.flow];
      const uint64_t tail = c->seg.ring(c->rank, f.peer)->tail.load(std::memory_order_acquire);
      for (int k = op.first_open; k < op.nsteps; ++k) {
        Step& s = op.steps[k];
        if (s.end_head == 0) {
          // The step the flow is pushing, stopped by a full ring: the data is there, the
          // receiver has given no credit.
          if (f.ring_full && s.state == ab::kStateSendGPUWait && f.sent >= stepBegin(op, k)) {
            recordStep(&op, k, ab::kStateSendPeerWait, op.trans);
          }
          break;
        }
        // All pushed: data was ready (SendPeerWait) and went on the wire (SendWait).
        if (s.state == ab::kStateSendGPUWait) recordStep(&op, k, ab::kStateSendPeerWait, op.trans);
        if (s.state == ab::kStateSendPeerWait) {
          op.trans = stepBytes(op, k);
          recordStep(&op, k, ab::kStateSendWait, op.trans);
        }
      }
      while (op.first_open < op.nsteps && op.steps[op.first_open].state == ab::kStateSendWait &&
             tail >= op.steps[op.first_open].end_head) {
        stopStep(&op, op.first_open);
      }
    } else {
      const InFlow& f = p.ins[op.flow];
      const size_t got = f.got0 + f.got1;
      while (op.first_open < op.nsteps && got >= op.steps[op.first_open].end) {
        op.trans = stepBytes(op, op.first_open);
        recordStep(&op, op.first_open, ab::kStateRecvFlushWait, op.trans);
        recordStep(&op, op.first_open, ab::kStateRecvGPUWait, op.trans);
        stopStep(&op, op.first_open);
      }
    }
  }
}

void ProxyTracker::end() {
  // The proxy thread runs only non-blocking plugin callbacks, so this wait is short.
  Backoff backoff;
  while (!appended_.load(std::memory_order_acquire)) backoff.pause();
  if (!live()) return;
  for (Op& op : ops_) {
    while (op.first_open < op.nsteps) stopStep(&op, op.first_open);
  }
  for (Kernel& k : kernels_) {
    if (!k.open) continue;
    ab::StateArgs a{};
    a.kernelCh.pTimer = prof::gpuTimerNs();
    prof::record(k.handle, ab::kStateKernelChStop, &a);
    prof::stop(k.handle);
    k.open = false;
  }
}

}  // namespace ncclsim
