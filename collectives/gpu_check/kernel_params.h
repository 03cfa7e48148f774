// The one by-value parameter of a launch, built the same way for the GPU (device pointers) and for
// the CPU twin that computes the expected result (host pointers): every rank's registered memory
// as one rank maps it, that rank's input, output and stall record, the call's epoch.
#pragma once

#include <cstdint>

#include "collectives/gpu_check/cases.h"
#include "collectives/planner/allreduce_kernel_args.h"
#include "collectives/planner/alltoall_kernel_args.h"

namespace ncclscope::gpu_check {

// Every rank's registered buffers as one rank has them mapped (index: rank).
struct CommView {
  unsigned char* staging[collectives::kMaxRanks] = {};
  unsigned char* scratch[collectives::kMaxRanks] = {};
  collectives::Signal* signal[collectives::kMaxRanks] = {};
};

// One rank's own side of a call.
struct RankIo {
  const unsigned char* input = nullptr;
  unsigned char* output = nullptr;
  collectives::KernelStall* stall = nullptr;
};

struct KernelParams {
  Op op = Op::kAllReduce;
  collectives::AllReduceKernelArgs allreduce{};
  collectives::AlltoAllKernelArgs alltoall{};
  // What cuLaunchKernel's kernelParams[0] points at.
  void* Arg() { return op == Op::kAlltoAll ? static_cast<void*>(&alltoall) : &allreduce; }
};

// Copy-in (the routing's only mode: the user's buffers are not registered): every rank reads its
// peers' staging buffers.
KernelParams MakeParams(const Case& c, const CommView& view, int rank, const RankIo& io,
                        uint32_t epoch, uint64_t timeout_ns);

// Sets every flag slot of *s to `value`: the state after a call of epoch `value` everywhere, so the
// next call may use epoch value + 1 (and a first epoch near 2^32 makes the counter wrap).
void FillFlags(collectives::Signal* s, uint32_t value);

}  // namespace ncclscope::gpu_check
