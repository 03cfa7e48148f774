// A coalesced group as PyTorch issues one (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:
// startCoalescing calls ncclGroupStart, then each collective, endCoalescing ncclGroupEnd) holding
// a gradient bucket's collectives of different sizes: the profiler sees their Coll events in
// NCCL's plan order, not in the order they were called.
#include <gtest/gtest.h>

#include <algorithm>
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

constexpr size_t kElems = 32768;  // per rank, for the send and the receive buffer
float g_send[2][kElems];
float g_recv[2][kElems];

// In call order, each on its own part of the buffers. Traffic (ncclFuncTrafficPerByte: 2 bytes
// per byte for AllReduce, nRanks for AllGather) in bytes: 128 Ki, 2 Ki, 32 Ki, 4 Ki, 8 Ki, 512.
int issueBucket(ncclComm_t c, int r, cudaStream_t s, float*, float*) {
  float* in = g_send[r];
  float* out = g_recv[r];
  bool ok = ncclGroupStart() == ncclSuccess;
  ok &= ncclAllReduce(in, out, 16384, ncclFloat32, ncclSum, c, s) == ncclSuccess;
  ok &= ncclAllReduce(in + 16384, out + 16384, 256, ncclFloat32, ncclSum, c, s) == ncclSuccess;
  ok &= ncclAllReduce(in + 16640, out + 16640, 4096, ncclFloat32, ncclSum, c, s) == ncclSuccess;
  ok &= ncclAllGather(in + 20736, out + 20736, 512, ncclFloat32, c, s) == ncclSuccess;
  ok &= ncclAllReduce(in + 21760, out + 21760, 1024, ncclFloat32, ncclMax, c, s) == ncclSuccess;
  ok &= ncclAllReduce(in + 22784, out + 22784, 64, ncclFloat32, ncclSum, c, s) == ncclSuccess;
  ok &= ncclGroupEnd() == ncclSuccess;
  return ok ? 0 : 1;
}

// NCCL 2.28.9: collTaskAppend puts each task into the planner's sorter by its traffic
// (src/include/comm.h ncclTaskCollSorterInsert: 1 KiB units, four bins per power of two), and
// src/enqueue.cc ncclPrepareTasks takes them out "ordered size descending", then gathers them by
// (function, reduction, datatype) in order of first appearance, each gathering a LIFO, so
// "assembled by (fn,op,ty) size ascending". Descending: the 128 Ki, 32 Ki and 8 Ki (max)
// allreduces, the allgather, the 2 Ki and 512-byte allreduces; gathered: the sum allreduces
// smallest first, then the max allreduce, then the allgather. seqNumber counts per function; an
// AllGather's count is in bytes (collTaskAppend turns it into ncclInt8).
TEST(ProfilerCoalescedOrder, BucketGroupCollsComeInNcclsPlanOrder) {
  ncclsim_test::inChild([] {
    simrec::knobs().mask = 4095;
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    CHILD_CHECK(job.run(issueBucket) == 0);
    const std::vector<Event> ev = simrec::events();
    const Lines want = {"AllReduce count=64 seq=0",   "AllReduce count=256 seq=1",
                        "AllReduce count=4096 seq=2", "AllReduce count=16384 seq=3",
                        "AllReduce count=1024 seq=4", "AllGather count=2048 seq=0"};
    for (int r = 0; r < 2; ++r) {
      Lines got;
      for (const Event& e : ev) {
        if (e.ctx == r && e.type == pabi::kEvColl && e.kind == Event::kStart) {
          got.push_back(e.func + " count=" + std::to_string(e.count) +
                        " seq=" + std::to_string(e.seq));
        }
      }
      if (got != want) {
        ncclsim_test::rankReport("rank %d, Coll starts:\n%s", r,
                                 ncclsim_test::diff(want, got).c_str());
        return 1;
      }
      CHILD_CHECK(ncclsim_test::checkParents(ev, r) == 0);
    }
    return 0;
  });
}

// The plan's one kernel works through its collectives in the plan's order, so their kernels start
// (the first KernelCh event of each, parented to its Coll: src/transport/profiler.cc
// profilerProxyProgress) in that order too, not in call order: a later call's kernel can start
// first.
TEST(ProfilerCoalescedOrder, BucketGroupKernelsStartInNcclsPlanOrder) {
  ncclsim_test::inChild([] {
    simrec::knobs().mask = 4095;
    ncclsim_test::TwoRanks job;
    CHILD_CHECK(job.init() == 0);
    CHILD_CHECK(job.run(issueBucket) == 0);
    const std::vector<Event> ev = simrec::events();
    const Lines want = {"AllReduce count=64",    "AllReduce count=256",  "AllReduce count=4096",
                        "AllReduce count=16384", "AllReduce count=1024", "AllGather count=2048"};
    for (int r = 0; r < 2; ++r) {
      Lines got;
      std::vector<int> started;  // Coll event numbers whose first KernelCh came
      for (const Event& k : ev) {
        if (k.ctx != r || k.type != pabi::kEvKernelCh || k.kind != Event::kStart) continue;
        if (std::find(started.begin(), started.end(), k.parent) != started.end()) continue;
        started.push_back(k.parent);
        for (const Event& c : ev) {
          if (c.id == k.parent && c.kind == Event::kStart && c.type == pabi::kEvColl) {
            got.push_back(c.func + " count=" + std::to_string(c.count));
          }
        }
      }
      if (got != want) {
        ncclsim_test::rankReport("rank %d, first KernelCh of each Coll:\n%s", r,
                                 ncclsim_test::diff(want, got).c_str());
        return 1;
      }
    }
    return 0;
  });
}

}  // namespace
