// One simulated rank's memory on the device (input, output, the registered staging, scratch and
// flags, its stall record), the kernels' module, and waiting for kernels with a host-side deadline
// so that a kernel whose bounded wait failed to end it is reported as a hang instead of blocking
// the check for ever.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives/gpu_check/cases.h"
#include "collectives/gpu_check/driver.h"
#include "collectives/planner/allreduce_kernel_args.h"

namespace ncclscope::gpu_check {

struct DeviceRank {
  CUdeviceptr input = 0, output = 0, staging = 0, scratch = 0, signal = 0, stall = 0;
};

// Allocates `bytes` of each buffer, flags as after epoch first_epoch - 1, stall record zeroed.
// False with *error naming the call that failed (what was allocated is freed).
bool AllocateRank(const Driver& cu, size_t bytes, uint32_t first_epoch, DeviceRank* r,
                  std::string* error);
void FreeRank(const Driver& cu, DeviceRank* r);

// Every flag slot of the rank as after epoch `value`, and its stall record zeroed (synchronous).
bool ResetRankFlags(const Driver& cu, const DeviceRank& r, uint32_t value);

// The rank's stall record (after its kernel ended).
bool ReadStall(const Driver& cu, const DeviceRank& r, collectives::KernelStall* out);

// "rank 3 waited for rank 5 at the start barrier of block 2 (epoch 17, flag 16)".
std::string StallText(const collectives::KernelStall& k);

// The ten kernels of the four embedded fatbins.
struct Kernels {
  CUfunction allreduce[2][3] = {};  // [one-shot, two-shot][fp16, fp32, bf16]
  CUfunction alltoall = nullptr;
  CUfunction exchange = nullptr;
  CUfunction moe_dispatch = nullptr, moe_combine = nullptr;
  CUfunction Of(const Case& c) const;
};
// False with *error when the build has no device code or a kernel is missing.
bool LoadKernels(const Driver& cu, Kernels* k, std::string* error);

// Polls the streams until all are idle or MonotonicNs() passes deadline_ns. False on a timeout
// (*stuck: the first stream still busy, *error "timed out") or an error (*error).
bool WaitStreams(const Driver& cu, const CUstream* streams, int n, int64_t deadline_ns, int* stuck,
                 std::string* error);

// How long past a kernel's own bounded wait the check waits before calling it a hang.
inline constexpr int64_t kHangMarginNs = 30ll * 1000 * 1000 * 1000;

// WaitStreams for kernels just launched whose every wait ends `timeout_ns` after they start: the
// deadline is that plus kHangMarginNs from now.
bool WaitKernels(const Driver& cu, const CUstream* streams, int n, uint64_t timeout_ns, int* stuck,
                 std::string* error);

// One kernel of one rank: launches fn (blocks x threads, its one by-value parameter) on `stream`,
// waits for it (WaitKernels) and reads the stall record at `stall` (zeroed by the caller, as the
// uploads it reads are complete). Empty when it ended in time without a stall; else the launch's
// or the wait's error, or "stalled: " and the record. *hang when it outlived its bounded wait (the
// context is then unusable).
std::string LaunchAndWait(const Driver& cu, CUfunction fn, unsigned blocks, unsigned threads,
                          void* param, CUstream stream, CUdeviceptr stall, uint64_t timeout_ns,
                          bool* hang);

}  // namespace ncclscope::gpu_check
