// What the single-device part of the check carries from one rank count's step to the next: the
// driver, the loaded kernels, the options, the device, the summary being filled, and how many
// runs failed (single_device.cpp, exchange_run.cpp, moe_run.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/gpu_check/device_rank.h"
#include "collectives/gpu_check/open_device.h"
#include "collectives/gpu_check/options.h"
#include "collectives/gpu_check/report.h"

namespace ncclscope::gpu_check {

struct RankCountRun {
  const Driver& cu;
  const Kernels& kernels;
  const Options& o;
  const DeviceFacts& facts;
  Summary* summary;
  size_t* case_index;  // across rank counts, so every case draws its own inputs
  bool* corrupted;     // --self-test-corrupt flipped its byte already
  int failures = 0;
  bool exchange_corrupted = false;  // the same for the exchange's comparison
  bool moe_corrupted = false;       // and for the MoE dispatch's
};

// How many blocks of `threads` of this kernel the whole device holds at once; -1: unknown.
int DeviceCapacity(const Driver& cu, const DeviceFacts& f, CUfunction fn, uint32_t threads,
                   int* regs);

}  // namespace ncclscope::gpu_check
