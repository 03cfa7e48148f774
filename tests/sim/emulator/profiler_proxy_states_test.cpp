// Where proxy steps wait under link faults. The transfer is a 2 MiB send from rank 0 to rank 1:
// two channels of 1 MiB, four 256 KiB steps each, one ring chunk per step, and four ring slots,
// so the sender can put channel 0 on the wire before it needs credit from the receiver.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include <cuda.h>
#include <nccl.h>

#include "sim/emulator/ncclsim_control.h"
#include "sim/emulator/profiler_abi.h"
#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/profiler_recorder.h"
#include "tests/sim/emulator/profiler_test_support.h"

namespace pabi = ncclsim::profabi;
using simrec::Event;

namespace {

constexpr size_t kProxyBytes = size_t(2) << 20;

struct StepState {
  int channel = -1;
  int step = -1;
  int last = 0;  // last state; -1 once stopped
};

// Rank r's proxy steps, by channel and step, with their latest state.
std::vector<StepState> steps(const std::vector<Event>& ev, int r) {
  std::map<int, int> op_channel;
  std::map<int, StepState> by_id;
  for (const Event& e : ev) {
    if (e.ctx != r) continue;
    if (e.kind == Event::kStart && e.type == pabi::kEvProxyOp) op_channel[e.id] = e.channel;
    if (e.type != pabi::kEvProxyStep) continue;
    if (e.kind == Event::kStart) by_id[e.id] = StepState{op_channel[e.parent], e.step, 0};
    if (e.kind == Event::kState) by_id[e.id].last = e.state;
    if (e.kind == Event::kStop) by_id[e.id].last = -1;
  }
  std::vector<StepState> out;
  for (const auto& [id, s] : by_id) out.push_back(s);
  return out;
}

// Starts the send and the receive, then waits (bounded) until the sender has a step waiting
// for credit (every chunk the ring holds is on the wire and none was taken) and the proxy thread
// has posted the receiver's steps (it may take the two operations after the sender moved).
int startTransfer(ncclsim_test::TwoRanks* job, std::vector<Event>* ev) {
  std::vector<char> send(kProxyBytes, 1), recv(kProxyBytes, 0);
  CHILD_CHECK(ncclSend(send.data(), kProxyBytes, ncclInt8, 1, job->comms[0],
                       reinterpret_cast<cudaStream_t>(job->streams[0])) == ncclSuccess);
  CHILD_CHECK(ncclRecv(recv.data(), kProxyBytes, ncclInt8, 0, job->comms[1],
                       reinterpret_cast<cudaStream_t>(job->streams[1])) == ncclSuccess);
  for (int i = 0; i < 15000; ++i) {
    *ev = simrec::events();
    const bool receiver_posted = steps(*ev, 1).size() == 8;
    for (const StepState& s : steps(*ev, 0)) {
      if (s.last == pabi::kStateSendPeerWait && receiver_posted) return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHILD_CHECK(!"the sender never waited for credit");
  return 1;
}

// src/transport/net.cc sendProxyProgress: a step whose data went out (isend posted) waits in
// SendWait until the network completes it; the next step has its data ready but isend gets no
// request without the receiver's credit, so it records SendPeerWait; later steps are posted and
// wait for the GPU (SendGPUWait). recvProxyProgress: a posted receive waits in RecvWait.
int checkStuck(const std::vector<Event>& ev) {
  for (const StepState& s : steps(ev, 0)) {
    const int want = s.channel == 0                  ? pabi::kStateSendWait
                     : s.channel == 1 && s.step == 0 ? pabi::kStateSendPeerWait
                                                     : pabi::kStateSendGPUWait;
    ncclsim_test::rankReport("send ch %d step %d state %d", s.channel, s.step, s.last);
    CHILD_CHECK(s.last == want);
  }
  const std::vector<StepState> recv = steps(ev, 1);
  CHILD_CHECK(recv.size() == 8);
  for (const StepState& s : recv) CHILD_CHECK(s.last == pabi::kStateRecvWait);
  return 0;
}

// A hung link (ncclsimSetLinkHung): nothing arrives, so the steps stay where NCCL's would.
TEST(ProfilerProxyStates, HungLinkLeavesStepsWaitingOnThePeer) {
  ncclsim_test::inChild([] {
    simrec::knobs().mask = 4095;
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    ncclsimSetLinkHung(1);
    std::vector<Event> ev;
    CHILD_CHECK(startTransfer(&job, &ev) == 0);
    CHILD_CHECK(checkStuck(ev) == 0);
    for (ncclComm_t c : job.comms) ncclCommAbort(c);
    return 0;
  });
}

// A slow link: the first chunk arrives only after ~4.6 s of modeled time (slowdown 1e5), so the
// same states hold while the transfer dwells on the wire.
TEST(ProfilerProxyStates, SlowLinkDwellsInSendWaitAndRecvWait) {
  ncclsim_test::inChild([] {
    simrec::knobs().mask = 4095;
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    ncclsimSetLinkSlowdown(1e5);
    std::vector<Event> ev;
    CHILD_CHECK(startTransfer(&job, &ev) == 0);
    CHILD_CHECK(checkStuck(ev) == 0);
    for (ncclComm_t c : job.comms) ncclCommAbort(c);
    return 0;
  });
}

// Rank r's KernelCh starts.
int kernelStarts(const std::vector<Event>& ev, int r) {
  int n = 0;
  for (const Event& e : ev) {
    n += e.ctx == r && e.type == pabi::kEvKernelCh && e.kind == Event::kStart ? 1 : 0;
  }
  return n;
}

std::atomic<bool> g_release{false};

void holdStream(void*) {
  while (!g_release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// A stream held by earlier work (here a host function, as a long kernel would) keeps NCCL's
// kernel from starting, not its proxy: src/enqueue.cc ncclLaunchKernelAfter_NoCuda ->
// hostStreamPlanTask -> uploadProxyOps (ncclProxySaveOp) and ncclProxyStart post the operation's
// proxy work right after the launch, on the launching thread; src/proxy.cc ProxyAppend ->
// ncclProxyOpToArgs starts the ProxyOp on the proxy thread, and src/transport/net.cc's first
// progress pass marks it in progress and posts its steps: the sender's wait for their data from
// the GPU (SendGPUWait), the receiver's irecvs wait for the network (RecvWait). No KernelCh
// starts on the held rank until its stream reaches the kernel; then everything completes.
TEST(ProfilerProxyStates, BlockedStreamShowsPostedStepsAndNoKernel) {
  ncclsim_test::inChild([] {
    simrec::knobs().mask = 4095;
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    CHILD_CHECK(cuLaunchHostFunc(job.streams[0], holdStream, nullptr) == CUDA_SUCCESS);
    std::vector<char> send(kProxyBytes, 1), recv(kProxyBytes, 0);
    CHILD_CHECK(ncclSend(send.data(), kProxyBytes, ncclInt8, 1, job.comms[0],
                         reinterpret_cast<cudaStream_t>(job.streams[0])) == ncclSuccess);
    CHILD_CHECK(ncclRecv(recv.data(), kProxyBytes, ncclInt8, 0, job.comms[1],
                         reinterpret_cast<cudaStream_t>(job.streams[1])) == ncclSuccess);
    // Both ranks' 8 steps posted (2 channels x 4 steps), and the receiver's kernel started.
    auto posted = [](const std::vector<Event>& ev, int r, int state) {
      const std::vector<StepState> s = steps(ev, r);
      int n = 0;
      for (const StepState& st : s) n += st.last == state ? 1 : 0;
      return n == 8 && s.size() == 8;
    };
    std::vector<Event> ev;
    bool ready = false;
    for (int i = 0; i < 15000 && !ready; ++i) {
      ev = simrec::events();
      ready = posted(ev, 0, pabi::kStateSendGPUWait) && posted(ev, 1, pabi::kStateRecvWait) &&
              kernelStarts(ev, 1) == 2;
      if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    CHILD_CHECK(ready);
    CHILD_CHECK(kernelStarts(ev, 0) == 0);
    g_release.store(true);
    for (CUstream st : job.streams) CHILD_CHECK(cuStreamSynchronize(st) == CUDA_SUCCESS);
    CHILD_CHECK(recv == send);
    ev = simrec::events();
    for (int r = 0; r < 2; ++r) {
      CHILD_CHECK(ncclsim_test::checkDeviceAndProxy(ev, r, job.caller, 2) == 0);
    }
    return 0;
  });
}

}  // namespace
