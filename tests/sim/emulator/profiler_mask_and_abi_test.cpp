// The activation mask, the v4 table, opted-out and 1-rank communicators, and when device events
// start, in the emulated NCCL's profiler events.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include <cuda.h>
#include <nccl.h>

#include "sim/emulator/profiler_abi.h"
#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/profiler_recorder.h"
#include "tests/sim/emulator/profiler_test_support.h"

namespace pabi = ncclsim::profabi;
using simrec::Event;
using Lines = std::vector<std::string>;

namespace {

int countStarts(const std::vector<Event>& ev, uint64_t type, int ctx) {
  int n = 0;
  for (const Event& e : ev) n += e.kind == Event::kStart && e.type == type && e.ctx == ctx;
  return n;
}

// src/plugin/profiler.cc: each start function tests a mask of its type and every descendant, so
// asking for KernelCh alone emits GroupApi, CollApi, Group and Coll (its ancestors) and no
// KernelLaunch or proxy events. The mask is read again at every task
// (ncclProfilerStartGroupApiEvent), so the plugin may change it between calls.
TEST(ProfilerMask, ChildImpliesAncestorsAndIsReadAtEveryCall) {
  ncclsim_test::inChild([] {
    simrec::knobs().mask = int(pabi::kEvKernelCh);
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    CHILD_CHECK(job.run(ncclsim_test::issueKind(0)) == 0);
    std::vector<Event> ev = simrec::events();
    const Lines want = {"GroupApi start depth=1",
                        "GroupApi state 23",
                        "CollApi start AllReduce",
                        "CollApi stop",
                        "GroupApi state 24",
                        "Group start",
                        "Coll start AllReduce seq=0",
                        "Coll stop",
                        "Group stop",
                        "GroupApi stop"};
    CHILD_CHECK(simrec::sequence(ev, 0, job.caller) == want);
    CHILD_CHECK(countStarts(ev, pabi::kEvKernelCh, 0) == 2);
    CHILD_CHECK(countStarts(ev, pabi::kEvProxyOp, 0) == 0);
    CHILD_CHECK(countStarts(ev, pabi::kEvProxyStep, 0) == 0);
    // Mask 0 at run time: no event, except that ncclProfilerStopCollApiEvent, which keeps the
    // thread's last handle (rank 1's CollApi: both ranks call from this thread), stops it again
    // at each call.
    simrec::clear();
    *simrec::liveMask() = 0;
    CHILD_CHECK(job.run(ncclsim_test::issueKind(0)) == 0);
    ev = simrec::events();
    CHILD_CHECK(simrec::sequence(ev, 0, job.caller).empty());
    CHILD_CHECK(simrec::sequence(ev, 1, job.caller) == (Lines{"CollApi stop", "CollApi stop"}));
    CHILD_CHECK(countStarts(ev, pabi::kEvKernelCh, 0) == 0);
    // ProxyStep alone: its ancestors ProxyOp and Coll come along, KernelCh does not; the
    // collective's seqNumber counted the unprofiled call (comm->seqNumber counts every launch).
    simrec::clear();
    *simrec::liveMask() = int(pabi::kEvProxyStep);
    CHILD_CHECK(job.run(ncclsim_test::issueKind(0)) == 0);
    ev = simrec::events();
    CHILD_CHECK(countStarts(ev, pabi::kEvKernelCh, 0) == 0);
    CHILD_CHECK(countStarts(ev, pabi::kEvProxyOp, 0) == 4);
    CHILD_CHECK(countStarts(ev, pabi::kEvProxyStep, 0) > 4);
    CHILD_CHECK(countStarts(ev, pabi::kEvKernelLaunch, 0) == 0);
    for (const Event& e : ev) {
      if (e.kind == Event::kStart && e.type == pabi::kEvColl) CHILD_CHECK(e.seq == 2);
    }
    CHILD_CHECK(ncclsim_test::checkParents(ev, 0) == 0);
    return 0;
  });
}

// NCCLSIM_PROFILER_ABI=4: NCCL's v4 adapter (src/plugin/profiler/profiler_v4.cc) drops the API
// events and states 23/24 and parents Coll to the Group event.
TEST(ProfilerAbi, V4TableGetsGroupCollAndDeviceEvents) {
  ncclsim_test::inChild([] {
    setenv("NCCLSIM_PROFILER_ABI", "4", 1);
    simrec::knobs().mask = 4095;
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    CHILD_CHECK(job.run(ncclsim_test::issueKind(0)) == 0);
    const std::vector<Event> ev = simrec::events();
    for (const Event& e : ev) CHILD_CHECK(e.kind != Event::kInit || e.table == "exe-v4");
    const Lines want = {"Group start", "Coll start AllReduce seq=0", "Coll stop", "Group stop"};
    CHILD_CHECK(simrec::sequence(ev, 1, job.caller) == want);
    int group = -1;
    for (const Event& e : ev) {
      if (e.ctx != 1 || e.kind != Event::kStart) continue;
      if (e.type == pabi::kEvGroup) group = e.id;
      if (e.type == pabi::kEvColl) CHILD_CHECK(e.parent == group && group >= 0);
    }
    CHILD_CHECK(countStarts(ev, pabi::kEvKernelCh, 1) == 2);
    CHILD_CHECK(countStarts(ev, pabi::kEvProxyOp, 1) == 4);
    return 0;
  });
}

// ncclProfilerStart*Event pass comm->profilerContext whatever it is: a communicator whose init
// answered a null context still gets every event, with that null context, and no finalize
// (ncclProfilerPluginFinalize finalizes only a context).
TEST(ProfilerAbi, OptedOutCommunicatorStillGetsEventsWithNullContext) {
  ncclsim_test::inChild([] {
    simrec::knobs().mask = 4095;
    simrec::knobs().null_ctx_rank = 1;
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    CHILD_CHECK(job.run(ncclsim_test::issueKind(0)) == 0);
    std::vector<Event> ev = simrec::events();
    CHILD_CHECK(simrec::sequence(ev, -1, job.caller).size() == 12);
    CHILD_CHECK(countStarts(ev, pabi::kEvKernelCh, -1) == 2);
    for (ncclComm_t c : job.comms) CHILD_CHECK(ncclCommDestroy(c) == ncclSuccess);
    ev = simrec::events();
    int finalized = 0;
    for (const Event& e : ev) finalized += e.kind == Event::kFinalize;
    CHILD_CHECK(finalized == 1);
    return 0;
  });
}

// taskAppend (src/enqueue.cc): on a 1-rank communicator a collective is a copy
// (ncclLaunchOneRank) with no task and no event; a send/receive to self is still a task.
TEST(ProfilerAbi, OneRankCollectiveEmitsNothingButSelfSendRecvDoes) {
  ncclsim_test::inChild([] {
    simrec::knobs().mask = 4095;
    ncclUniqueId id;
    ncclComm_t comm;
    CHILD_CHECK(ncclGetUniqueId(&id) == ncclSuccess);
    CHILD_CHECK(ncclCommInitRank(&comm, 1, id, 0) == ncclSuccess);
    std::vector<float> a(64, 1.0f), b(64, 0.0f);
    for (int k = 0; k < 8; ++k) {
      CHILD_CHECK(ncclsim_test::issueKind(k)(comm, 0, nullptr, a.data(), b.data()) == 0);
    }
    CHILD_CHECK(cuStreamSynchronize(nullptr) == CUDA_SUCCESS);
    std::vector<Event> ev = simrec::events();
    for (const Event& e : ev) CHILD_CHECK(e.kind == Event::kInit);
    CHILD_CHECK(ncclGroupStart() == ncclSuccess);
    CHILD_CHECK(ncclSend(a.data(), 16, ncclFloat32, 0, comm, nullptr) == ncclSuccess);
    CHILD_CHECK(ncclRecv(b.data(), 16, ncclFloat32, 0, comm, nullptr) == ncclSuccess);
    CHILD_CHECK(ncclGroupEnd() == ncclSuccess);
    CHILD_CHECK(cuStreamSynchronize(nullptr) == CUDA_SUCCESS);
    ev = simrec::events();
    CHILD_CHECK(countStarts(ev, pabi::kEvP2p, 0) == 2);
    CHILD_CHECK(countStarts(ev, pabi::kEvProxyOp, 0) == 0);  // no network peer
    return 0;
  });
}

std::atomic<bool> g_gate_open{false};
void gate(void*) {
  while (!g_gate_open.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// KernelCh starts when the operation begins to run on its stream, not when it is queued: a
// stream held by a host function has launched (KernelLaunch, Coll) but started nothing.
TEST(ProfilerEventStream, KernelStartFollowsTheStreamNotTheCall) {
  ncclsim_test::inChild([] {
    simrec::knobs().mask = 4095;
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    CHILD_CHECK(cuLaunchHostFunc(job.streams[1], gate, nullptr) == CUDA_SUCCESS);
    for (int r = 0; r < 2; ++r) {
      CHILD_CHECK(ncclsim_test::issueKind(0)(job.comms[r], r,
                                             reinterpret_cast<cudaStream_t>(job.streams[r]),
                                             job.send[r].data(), job.recv[r].data()) == 0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::vector<Event> ev = simrec::events();
    CHILD_CHECK(countStarts(ev, pabi::kEvColl, 1) == 1);
    CHILD_CHECK(countStarts(ev, pabi::kEvKernelCh, 1) == 0);
    g_gate_open.store(true);
    for (CUstream s : job.streams) CHILD_CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
    ev = simrec::events();
    CHILD_CHECK(countStarts(ev, pabi::kEvKernelCh, 1) == 2);
    CHILD_CHECK(ncclsim_test::checkDeviceAndProxy(ev, 1, job.caller, 2) == 0);
    return 0;
  });
}

}  // namespace
