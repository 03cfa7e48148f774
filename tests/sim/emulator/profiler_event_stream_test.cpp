// The event stream the emulated NCCL gives a profiler plugin, per kind of operation, stated
// exactly. Each test runs in a forked child with two ranks of one communicator in that process
// (ncclCommInitAll), each rank on its own stream, so both ranks' events land in one list; the
// calls are made on this thread, the device and proxy events come from the stream workers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
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

// src/enqueue.cc ncclEnqueueCheck -> taskAppend -> collTaskAppend: GroupApi start (groupDepth 1,
// the implicit group) and state 23 (ncclProfilerStartGroupApiEvent, RecordGroupApiEventState),
// CollApi start and stop around appending the task; src/group.cc ncclGroupEndInternal: state 24;
// doLaunches -> ncclLaunchKernel: KernelLaunch start/stop around the launch;
// ncclLaunchKernelAfter_NoCuda -> hostStreamPlanTask: Group start, Coll start (StartTaskEvents),
// Coll stop (StopTaskEvents), Group stop; ncclGroupEndInternal's exit: GroupApi stop.
Lines ungroupedColl(const std::string& func) {
  return {"GroupApi start depth=1",
          "GroupApi state 23",
          "CollApi start " + func,
          "CollApi stop",
          "GroupApi state 24",
          "KernelLaunch start",
          "KernelLaunch stop",
          "Group start",
          "Coll start " + func + " seq=0",
          "Coll stop",
          "Group stop",
          "GroupApi stop"};
}

// p2pTaskAppend per task (AlltoAll: send and receive per peer in rank order; Gather: the send to
// the root, then at the root a receive per rank; Scatter: at the root a send per rank, then the
// receive from the root), each P2pApi named Send or Recv; then the plan's P2p events in the order
// src/enqueue.cc scheduleP2pTasksToPlan takes the tasks (ncclProfilerStartTaskEvents walks
// plan->p2pTaskQueue): round after round of the rank's p2p schedule (src/init.cc
// ncclP2pSchedule; with two ranks, itself then the other), a round's send before its receive.
using Tasks = std::vector<std::pair<std::string, int>>;
Lines ungroupedP2p(const Tasks& appended, const Tasks& planned) {
  Lines l = {"GroupApi start depth=1", "GroupApi state 23"};
  for (const auto& t : appended) {
    l.push_back("P2pApi start " + t.first);
    l.push_back("P2pApi stop");
  }
  for (const char* s :
       {"GroupApi state 24", "KernelLaunch start", "KernelLaunch stop", "Group start"}) {
    l.push_back(s);
  }
  for (const auto& t : planned)
    l.push_back("P2p start " + t.first + " peer=" + std::to_string(t.second));
  for (size_t i = 0; i < planned.size(); ++i) l.push_back("P2p stop");
  l.push_back("Group stop");
  l.push_back("GroupApi stop");
  return l;
}
Lines ungroupedP2p(const Tasks& tasks) {
  return ungroupedP2p(tasks, tasks);
}

struct KindCase {
  const char* name;
  ncclsim_test::IssueFn issue;
  Lines rank0, rank1;
};

class PerKind : public ::testing::TestWithParam<int> {};

std::vector<KindCase> cases() {
  using ncclsim_test::issueKind;
  return {
      {"AllReduce", issueKind(0), ungroupedColl("AllReduce"), ungroupedColl("AllReduce")},
      {"Broadcast", issueKind(1), ungroupedColl("Broadcast"), ungroupedColl("Broadcast")},
      {"Reduce", issueKind(2), ungroupedColl("Reduce"), ungroupedColl("Reduce")},
      {"AllGather", issueKind(3), ungroupedColl("AllGather"), ungroupedColl("AllGather")},
      {"ReduceScatter", issueKind(4), ungroupedColl("ReduceScatter"),
       ungroupedColl("ReduceScatter")},
      {"AlltoAll", issueKind(5), ungroupedP2p({{"Send", 0}, {"Recv", 0}, {"Send", 1}, {"Recv", 1}}),
       ungroupedP2p({{"Send", 0}, {"Recv", 0}, {"Send", 1}, {"Recv", 1}},
                    {{"Send", 1}, {"Recv", 1}, {"Send", 0}, {"Recv", 0}})},
      {"Gather", issueKind(6), ungroupedP2p({{"Send", 0}, {"Recv", 0}, {"Recv", 1}}),
       ungroupedP2p({{"Send", 0}})},
      {"Scatter", issueKind(7),
       ungroupedP2p({{"Send", 0}, {"Send", 1}, {"Recv", 0}},
                    {{"Send", 0}, {"Recv", 0}, {"Send", 1}}),
       ungroupedP2p({{"Recv", 0}})},
      {"SendRecv", issueKind(8), ungroupedP2p({{"Send", 1}}), ungroupedP2p({{"Recv", 0}})},
  };
}

TEST_P(PerKind, HostSequenceThenDeviceAndProxyEvents) {
  const int index = GetParam();
  ncclsim_test::inChild([index] {
    const KindCase c = cases()[size_t(index)];
    simrec::knobs().mask = 4095;  // every v5 event type
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    CHILD_CHECK(job.run(c.issue) == 0);
    const std::vector<Event> ev = simrec::events();
    const Lines* want[2] = {&c.rank0, &c.rank1};
    for (int r = 0; r < 2; ++r) {
      CHILD_CHECK(ncclsim_test::checkSequence(ev, r, job.caller, *want[r],
                                              std::string(c.name) + ": host sequence") == 0);
      CHILD_CHECK(ncclsim_test::checkParents(ev, r) == 0);
      CHILD_CHECK(ncclsim_test::checkDeviceAndProxy(ev, r, job.caller, 2) == 0);
    }
    return 0;
  });
}

INSTANTIATE_TEST_SUITE_P(EachKind, PerKind, ::testing::Range(0, 9),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(cases()[size_t(i.param)].name);
                         });

// A user group of several operations: one GroupApi (groupDepth 2: the user's group plus the
// call's own, src/enqueue.cc ncclEnqueueCheck), API events per call, then one plan whose
// collectives come in ncclPrepareTasks' order (both are under 1 KiB of traffic, so one size bin
// of ncclTaskCollSorterInsert, newest first, then gathered per function: AllGather before
// AllReduce) before its P2p events (hostStreamPlanTask).
TEST(ProfilerEventStream, ExplicitGroupOfSeveralOperations) {
  ncclsim_test::inChild([] {
    simrec::knobs().mask = 4095;
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    CHILD_CHECK(job.run(ncclsim_test::issueMixedGroup) == 0);
    const std::vector<Event> ev = simrec::events();
    for (int r = 0; r < 2; ++r) {
      const std::string peer = std::to_string(1 - r);
      const Lines want = {"GroupApi start depth=2",
                          "GroupApi state 23",
                          "CollApi start AllReduce",
                          "CollApi stop",
                          "CollApi start AllGather",
                          "CollApi stop",
                          "P2pApi start Send",
                          "P2pApi stop",
                          "P2pApi start Recv",
                          "P2pApi stop",
                          "GroupApi state 24",
                          "KernelLaunch start",
                          "KernelLaunch stop",
                          "Group start",
                          "Coll start AllGather seq=0",
                          "Coll start AllReduce seq=0",
                          "P2p start Send peer=" + peer,
                          "P2p start Recv peer=" + peer,
                          "Coll stop",
                          "Coll stop",
                          "P2p stop",
                          "P2p stop",
                          "Group stop",
                          "GroupApi stop"};
      CHILD_CHECK(ncclsim_test::checkSequence(ev, r, job.caller, want, "calling thread") == 0);
      CHILD_CHECK(ncclsim_test::checkParents(ev, r) == 0);
      CHILD_CHECK(ncclsim_test::checkDeviceAndProxy(ev, r, job.caller, 2) == 0);
    }
    return 0;
  });
}

// NCCLSIM_NCHANNELS splits every task over that many channels: one KernelCh per channel, each
// with the device clock (far from the host's CLOCK_MONOTONIC), stop time after start time.
TEST(ProfilerEventStream, SeveralChannelsOnTheDeviceClock) {
  ncclsim_test::inChild([] {
    setenv("NCCLSIM_NCHANNELS", "4", 1);
    simrec::knobs().mask = 4095;
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    CHILD_CHECK(job.run(ncclsim_test::issueKind(0)) == 0);
    const std::vector<Event> ev = simrec::events();
    const uint64_t host_now = ncclsim_test::hostNowNs();
    for (int r = 0; r < 2; ++r) {
      CHILD_CHECK(ncclsim_test::checkDeviceAndProxy(ev, r, job.caller, 4) == 0);
      int channels_seen = 0;
      for (const Event& e : ev) {
        if (e.ctx != r || e.type != pabi::kEvKernelCh || e.kind == Event::kStop) continue;
        // Both timers of the device clock: at least 1e17 ns away from the host clock.
        CHILD_CHECK(e.ptimer > host_now + 100000000000000000ull);
        if (e.kind == Event::kStart) channels_seen |= 1 << e.channel;
      }
      CHILD_CHECK(channels_seen == 0xf);
      for (const Event& e : ev) {
        if (e.ctx == r && e.type == pabi::kEvColl && e.kind == Event::kStart) {
          CHILD_CHECK(e.channels == 4);
        }
      }
    }
    return 0;
  });
}

}  // namespace
