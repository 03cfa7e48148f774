// The device and proxy side of the profiler events:
// - at launch, on the emulated proxy thread (proxy_thread.h), whether or not the stream has
//   reached the operation: ProxyOp per (channel, peer, direction) of the task's transfers with
//   ProxyOpInProgress (src/proxy.cc ProxyAppend; net.cc's first progress pass), and its steps
//   posted: send steps in SendGPUWait (waiting for the GPU's data), receive steps in RecvWait
//   (irecv posted). So behind a blocked stream the proxy shows the steps and no kernel started;
// - from the stream worker that runs the operation (NCCL's proxy thread again in NCCL, which
//   polls the device): KernelCh per (task, channel), parent the task's Coll or P2p event,
//   started with the device's global timer when the operation starts and stopped (state
//   KernelChStop with the stop time, then stop) when that channel's share of the task's
//   transfers is done (src/transport/profiler.cc profilerProxyProgress); the steps' later
//   states: send SendPeerWait (data ready, no credit from the receiver), SendWait (on the wire,
//   not yet taken), stop; receive RecvFlushWait and RecvGPUWait once the data has arrived, stop
//   (net.cc sendProxyProgress / recvProxyProgress); ProxyOp stop after its last step.
// A transfer is split over prof::channels() channels and at most kMaxStepsPerChannel steps each,
// so the cost is bounded per operation, not per byte.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "sim/emulator/op_desc.h"
#include "sim/emulator/op_plan.h"

namespace ncclsim {

class ProxyTracker {
 public:
  static constexpr int kMaxStepsPerChannel = 4;

  // Null unless d's tasks ask for KernelCh, ProxyOp, ProxyStep or NetPlugin events. Called where
  // the plan is built; the plan's flows must not be added to later.
  static std::unique_ptr<ProxyTracker> make(const OpDesc& d, const OpPlan& p);

  // The launching thread, once the operation's launch events are out and before it is queued on
  // its stream: hands the ProxyOp appends and step posts to the proxy thread.
  void launch();

  // All below: the one stream worker that progresses the operation.
  // The operation starts running: KernelCh starts.
  void begin();
  // Out flow `out` has published `sent` elements; the ring's head is now `head`.
  void pushed(size_t out, size_t sent, uint64_t head) {
    Flow& f = out_flows_[out];
    if (sent >= f.next_boundary) markPushed(&f, sent, head);
  }
  // After a progress pass: step states and stops that the flows' progress implies.
  void update(const OpPlan& p);
  // Whether the proxy thread has appended the operation and posted its steps.
  bool appended() const { return appended_.load(std::memory_order_acquire); }
  // The operation finished or was abandoned: what is still open is stopped (nothing at all once
  // the communicator was finalized, as NCCL's proxy is gone by then). Waits for the proxy
  // thread's part first, so the tracker can be destroyed after it.
  void end();

 private:
  struct Step {
    size_t end = 0;         // flow-relative element where the step ends
    uint64_t end_head = 0;  // send: ring head after its last chunk (0: not all pushed)
    int state = 0;          // last state recorded; 0: posted, -1: stopped
    void* handle = nullptr;
  };
  struct Op {  // one ProxyOp: a channel's share of one flow
    int task = 0;
    int channel = 0;
    bool send = false;
    size_t flow = 0;
    int peer = 0;
    size_t lo = 0;  // flow-relative element where the op's share begins
    size_t elem_size = 1;
    int nsteps = 0;
    int first_open = 0;  // steps before it are stopped
    size_t trans = 0;    // NCCL's sub->transSize: bytes of the last step on the wire
    bool emit_op = false;
    bool emit_steps = false;
    void* handle = nullptr;
    Step steps[kMaxStepsPerChannel];
  };
  struct Kernel {
    int task = 0;
    int channel = 0;
    int open_ops = 0;
    bool open = false;
    void* handle = nullptr;
  };
  struct Flow {
    std::vector<size_t> ops;  // indices in ops_, in element order
    size_t next_boundary = SIZE_MAX;
  };

  ProxyTracker(const OpDesc& d, const OpPlan& p);
  static void appendOnProxyThread(void* self);
  void append();
  void addFlow(int task, bool send, size_t flow, int peer, size_t elems);
  static size_t stepBegin(const Op& op, int k);
  static size_t stepBytes(const Op& op, int k);
  void markPushed(Flow* f, size_t sent, uint64_t head);
  void recordStep(Op* op, int k, int state, size_t trans);
  void stopStep(Op* op, int k);
  void opDone(Op* op);
  bool live() const;

  OpDesc d_;
  int channels_;
  std::vector<Op> ops_;
  std::vector<Kernel> kernels_;
  std::vector<Flow> out_flows_;
  std::vector<Flow> in_flows_;
  // Set by the proxy thread once append() is done. Until then the stream worker leaves ops_'
  // handles and step states alone (pushed() only writes end_head and next_boundary).
  std::atomic<bool> appended_{false};
};

}  // namespace ncclsim
