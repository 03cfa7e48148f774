// With CUDA_LAUNCH_BLOCKING set, NCCL 2.28.9 runs a plan's hostStreamPlanTask as a host function
// on the communicator's host stream (src/enqueue.cc ncclLaunchPrepare: `persistent ||
// ncclCudaLaunchBlocking || status == cudaErrorNotReady`, for each plan with hasProxyOps,
// cudaLaunchHostFunc(hostStream, hostStreamPlanCallback, plan), then
// ncclStreamWaitStream(launchStream, hostStream)). hostStreamPlanCallback -> hostStreamPlanTask
// emits, on that stream's thread: ncclProfilerStartGroupEvent, ncclProfilerStartTaskEvents (Coll
// then P2p starts), uploadProxyOps, ncclProfilerStopTaskEvents (Coll then P2p stops),
// ncclProfilerStopGroupEvent. The caller keeps the API events, GroupEndApiStart, the
// KernelLaunch event (ncclLaunchKernel) and the GroupApi stop; ncclLaunchKernelAfter_NoCuda skips
// hostStreamPlanTask for a plan marked isHostCbEnq. src/misc/cudawrap.cc initOnceFunc: the
// variable counts when set, non-empty and not "0".
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "sim/emulator/profiler_abi.h"
#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/profiler_recorder.h"
#include "tests/sim/emulator/profiler_test_support.h"

namespace pabi = ncclsim::profabi;
using simrec::Event;
using Lines = std::vector<std::string>;

namespace {

bool isPlanEvent(const Event& e) {
  return e.type == pabi::kEvGroup || e.type == pabi::kEvColl || e.type == pabi::kEvP2p;
}

// The one thread that emitted rank r's Group, Coll and P2p events; a default id when none did
// or several did.
std::thread::id planThread(const std::vector<Event>& ev, int r) {
  std::thread::id t;
  for (const Event& e : ev) {
    if (e.ctx != r || !isPlanEvent(e)) continue;
    if (t == std::thread::id()) t = e.tid;
    if (e.tid != t) return {};
  }
  return t;
}

// Index in the recorder's list (one lock: the order in which the calls happened) of the stop of
// event `id`, or -1.
int stopIndex(const std::vector<Event>& ev, int id) {
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind == Event::kStop && ev[i].id == id) return int(i);
  }
  return -1;
}

// Each of rank r's KernelCh starts comes after its task's stop on the host stream (the launch
// stream waits for the host function), on another thread (the launch stream's worker). Returns
// how many KernelCh starts, -1 when one is out of place.
int kernelsAfterTheirPlans(const std::vector<Event>& ev, int r, std::thread::id host) {
  int kernels = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    if (e.ctx != r || e.kind != Event::kStart) continue;
    if (e.type == pabi::kEvKernelCh) {
      const int task_stop = stopIndex(ev, e.parent);
      if (task_stop < 0 || task_stop > int(i) || e.tid == host) return -1;
      ++kernels;
    }
  }
  return kernels;
}

// Rank r's events on the calling thread and on the host stream's, then the device and proxy
// events, which must follow the plan's: the launch stream waits for the host function.
int checkRank(const std::vector<Event>& ev, int r, std::thread::id caller, const Lines& on_caller,
              const Lines& on_host) {
  CHILD_CHECK(ncclsim_test::checkSequence(ev, r, caller, on_caller, "calling thread") == 0);
  const std::thread::id host = planThread(ev, r);
  CHILD_CHECK(host != std::thread::id());
  CHILD_CHECK(host != caller);
  CHILD_CHECK(ncclsim_test::checkSequence(ev, r, host, on_host, "host stream thread") == 0);
  CHILD_CHECK(kernelsAfterTheirPlans(ev, r, host) > 0);
  CHILD_CHECK(ncclsim_test::checkParents(ev, r) == 0);
  CHILD_CHECK(ncclsim_test::checkDeviceAndProxy(ev, r, caller, 2) == 0);
  return 0;
}

Lines callerOfUngroupedColl(const std::string& func) {
  return {"GroupApi start depth=1", "GroupApi state 23",  "CollApi start " + func, "CollApi stop",
          "GroupApi state 24",      "KernelLaunch start", "KernelLaunch stop",     "GroupApi stop"};
}

// Two AllReduces, one after the other: each plan's task on the same host stream thread, the
// second numbered 1 (comm->seqNumber, bumped in ncclProfilerStartTaskEvents).
TEST(ProfilerHostCallback, CollectiveEventsComeFromTheHostStream) {
  ncclsim_test::inChild([] {
    setenv("CUDA_LAUNCH_BLOCKING", "1", 1);
    simrec::knobs().mask = 4095;
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    CHILD_CHECK(job.run(ncclsim_test::issueKind(0)) == 0);
    CHILD_CHECK(job.run(ncclsim_test::issueKind(0)) == 0);
    const std::vector<Event> ev = simrec::events();
    Lines on_caller = callerOfUngroupedColl("AllReduce");
    const Lines once = on_caller;
    on_caller.insert(on_caller.end(), once.begin(), once.end());
    const Lines on_host = {"Group start", "Coll start AllReduce seq=0", "Coll stop", "Group stop",
                           "Group start", "Coll start AllReduce seq=1", "Coll stop", "Group stop"};
    for (int r = 0; r < 2; ++r) CHILD_CHECK(checkRank(ev, r, job.caller, on_caller, on_host) == 0);
    // One host stream per communicator (comm->sharedRes->hostStream).
    CHILD_CHECK(planThread(ev, 0) != planThread(ev, 1));
    return 0;
  });
}

// A user group: the plan's collectives in ncclPrepareTasks' order, then its P2p tasks, all
// started before any stops (StartTaskEvents, StopTaskEvents).
TEST(ProfilerHostCallback, GroupPlanOnTheHostStream) {
  ncclsim_test::inChild([] {
    setenv("CUDA_LAUNCH_BLOCKING", "yes", 1);
    simrec::knobs().mask = 4095;
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    CHILD_CHECK(job.run(ncclsim_test::issueMixedGroup) == 0);
    const std::vector<Event> ev = simrec::events();
    for (int r = 0; r < 2; ++r) {
      const std::string peer = std::to_string(1 - r);
      const Lines on_caller = {"GroupApi start depth=2",  "GroupApi state 23",
                               "CollApi start AllReduce", "CollApi stop",
                               "CollApi start AllGather", "CollApi stop",
                               "P2pApi start Send",       "P2pApi stop",
                               "P2pApi start Recv",       "P2pApi stop",
                               "GroupApi state 24",       "KernelLaunch start",
                               "KernelLaunch stop",       "GroupApi stop"};
      const Lines on_host = {"Group start",
                             "Coll start AllGather seq=0",
                             "Coll start AllReduce seq=0",
                             "P2p start Send peer=" + peer,
                             "P2p start Recv peer=" + peer,
                             "Coll stop",
                             "Coll stop",
                             "P2p stop",
                             "P2p stop",
                             "Group stop"};
      CHILD_CHECK(checkRank(ev, r, job.caller, on_caller, on_host) == 0);
    }
    return 0;
  });
}

// CUDA_LAUNCH_BLOCKING=0 is off: hostStreamPlanTask runs on the caller after the kernel launch.
TEST(ProfilerHostCallback, ZeroKeepsThePlanOnTheCaller) {
  ncclsim_test::inChild([] {
    setenv("CUDA_LAUNCH_BLOCKING", "0", 1);
    simrec::knobs().mask = 4095;
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    CHILD_CHECK(job.run(ncclsim_test::issueKind(0)) == 0);
    const std::vector<Event> ev = simrec::events();
    Lines want = callerOfUngroupedColl("AllReduce");
    want.insert(want.end() - 1,
                {"Group start", "Coll start AllReduce seq=0", "Coll stop", "Group stop"});
    for (int r = 0; r < 2; ++r) {
      CHILD_CHECK(ncclsim_test::checkSequence(ev, r, job.caller, want, "calling thread") == 0);
      CHILD_CHECK(planThread(ev, r) == job.caller);
    }
    return 0;
  });
}

}  // namespace
