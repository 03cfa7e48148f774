// In-place AlltoAll, Gather and Scatter as the emulated NCCL shows them to a profiler plugin.
// NCCL 2.28.9 src/enqueue.cc: taskAppend appends every part (one P2pApi each, the parts to the
// rank itself included), but scheduleP2pTasksToPlan skips a send to self whose buffer is its
// receive's ("Skip send to self in-place"): both tasks are freed unplanned, so they get no P2p
// event and no KernelCh or ProxyOp under one. That is an AlltoAll with sendbuff == recvbuff on
// every rank, a Gather at the root with sendbuff == recvbuff + root x part and a Scatter at the
// root with recvbuff == sendbuff + root x part. Two ranks of one communicator in one forked child,
// as in profiler_event_stream_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include <cuda.h>
#include <nccl.h>

#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/profiler_recorder.h"
#include "tests/sim/emulator/profiler_test_support.h"

using simrec::Event;
using Lines = std::vector<std::string>;
using Tasks = std::vector<std::pair<std::string, int>>;  // function, peer

namespace {

constexpr size_t kN = 32;  // elements per peer

int alltoallInPlace(ncclComm_t c, int, cudaStream_t s, float*, float* recv) {
  return ncclAlltoAll(recv, recv, kN, ncclFloat32, c, s) == ncclSuccess ? 0 : 1;
}

// Root 0: its own part of the result is where it sends from.
int gatherInPlace(ncclComm_t c, int r, cudaStream_t s, float* send, float* recv) {
  const float* from = r == 0 ? recv : send;
  return ncclGather(from, recv, kN, ncclFloat32, 0, c, s) == ncclSuccess ? 0 : 1;
}

// Root 0: it receives its own part where it sends it from.
int scatterInPlace(ncclComm_t c, int r, cudaStream_t s, float* send, float* recv) {
  float* to = r == 0 ? send : recv;
  return ncclScatter(send, to, kN, ncclFloat32, 0, c, s) == ncclSuccess ? 0 : 1;
}

// An ungrouped call: every appended part's P2pApi, then P2p events for the planned ones only.
Lines ungrouped(const Tasks& appended, const Tasks& planned) {
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

struct InPlaceCase {
  const char* name;
  ncclsim_test::IssueFn issue;
  Lines rank0, rank1;
};

std::vector<InPlaceCase> inPlaceCases() {
  return {
      {"AlltoAll", alltoallInPlace,
       ungrouped({{"Send", 0}, {"Recv", 0}, {"Send", 1}, {"Recv", 1}}, {{"Send", 1}, {"Recv", 1}}),
       ungrouped({{"Send", 0}, {"Recv", 0}, {"Send", 1}, {"Recv", 1}}, {{"Send", 0}, {"Recv", 0}})},
      {"Gather", gatherInPlace, ungrouped({{"Send", 0}, {"Recv", 0}, {"Recv", 1}}, {{"Recv", 1}}),
       ungrouped({{"Send", 0}}, {{"Send", 0}})},
      {"Scatter", scatterInPlace, ungrouped({{"Send", 0}, {"Send", 1}, {"Recv", 0}}, {{"Send", 1}}),
       ungrouped({{"Recv", 0}}, {{"Recv", 0}})},
  };
}

class InPlace : public ::testing::TestWithParam<int> {};

TEST_P(InPlace, PartsToSelfAreAppendedButNeverPlanned) {
  const int index = GetParam();
  ncclsim_test::inChild([index] {
    const InPlaceCase c = inPlaceCases()[size_t(index)];
    simrec::knobs().mask = 4095;  // every v5 event type
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    CHILD_CHECK(job.run(c.issue) == 0);
    const std::vector<Event> ev = simrec::events();
    const Lines* want[2] = {&c.rank0, &c.rank1};
    for (int r = 0; r < 2; ++r) {
      CHILD_CHECK(ncclsim_test::checkSequence(ev, r, job.caller, *want[r],
                                              std::string(c.name) + " in place: host sequence") ==
                  0);
      CHILD_CHECK(ncclsim_test::checkParents(ev, r) == 0);
      // Every planned part still runs on the device and through the proxy, to the other rank.
      CHILD_CHECK(ncclsim_test::checkDeviceAndProxy(ev, r, job.caller, 2) == 0);
    }
    return 0;
  });
}

INSTANTIATE_TEST_SUITE_P(EachKind, InPlace, ::testing::Range(0, 3),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(inPlaceCases()[size_t(i.param)].name);
                         });

}  // namespace
