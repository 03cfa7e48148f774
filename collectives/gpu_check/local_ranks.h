// Simulated ranks as separate buffers on ONE device, in this process: each rank its own registered
// memory, stream and events, its kernel launched with the others' buffers as peers. All ranks'
// blocks must be resident at once (their barriers wait for each other): the caller keeps
// nranks x blocks within what the device holds (single_device.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/gpu_check/cases.h"
#include "collectives/gpu_check/device_rank.h"
#include "collectives/gpu_check/kernel_params.h"

namespace ncclscope::gpu_check {

struct LocalRanks {
  int nranks = 0;
  std::vector<DeviceRank> mem;
  std::vector<CUstream> streams;  // non-blocking: never ordered behind another rank's work
  std::vector<CUevent> start, end;
  CommView view;  // device pointers: in one process every rank maps the others' as they are
};

bool SetUpLocalRanks(const Driver& cu, int nranks, size_t bytes, uint32_t first_epoch,
                     LocalRanks* l, std::string* error);
void TearDownLocalRanks(const Driver& cu, LocalRanks* l);

struct LaunchOutcome {
  bool hang = false;  // a kernel outlived its bounded wait by far: the context is unusable
  std::string error;  // a driver call failed
  std::vector<double> launch_us;                 // host time of each rank's cuLaunchKernel
  double last_rank_kernel_us = 0;                // events around the last-launched rank's kernel
  std::vector<collectives::KernelStall> stalls;  // each rank's record (code 0: none)
};

// One rank's launch: its kernel, shape and by-value parameter (copied by cuLaunchKernel).
struct RankLaunch {
  CUfunction fn = nullptr;
  unsigned blocks = 0, threads = 0;
  void* param = nullptr;
};

// Launches every rank but `absent` (-1: none) and those of 0 blocks (nothing to do) as launches[r]
// says, each on its own stream between its events, waits (host deadline: the bound `timeout_ns`
// plus a margin), reads the stall records. The uploads the kernels read must be complete before.
LaunchOutcome LaunchRanks(const Driver& cu, LocalRanks& l, const RankLaunch* launches,
                          uint64_t timeout_ns, int absent);

// Uploads inputs[r] (c.bytes) to each rank, poisons the outputs, launches every rank but `absent`
// (-1: none) with `epoch` and the bounded wait `timeout_ns`, waits (host deadline: the bound plus
// a margin), reads the stall records. The outputs stay on the device (DownloadOutput).
LaunchOutcome LaunchAll(const Driver& cu, const Kernels& k, LocalRanks& l, const Case& c,
                        const unsigned char* const* inputs, uint32_t epoch, uint64_t timeout_ns,
                        int absent);

bool DownloadOutput(const Driver& cu, const LocalRanks& l, int rank, size_t bytes,
                    unsigned char* out);

}  // namespace ncclscope::gpu_check
