// What the host passes to ncclscope's AllReduce kernels (by value, as the launch's one parameter)
// and what a kernel reports when a wait expires. Shared by the CUDA sources and the host side that
// launches them; the CPU twin takes the same facts as TwinCall and PeerMemory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/planner/epoch.h"

namespace ncclscope::collectives {

// Where a kernel that gave up says why (mapped host memory or device memory the host reads after
// the launch). `code` is 0 until the first block that times out claims it (atomicCAS) and fills
// the rest, as collectives::Stall does on the CPU.
struct KernelStall {
  int32_t code;  // 0: none; 1: a wait expired
  int32_t rank;
  int32_t peer;
  uint32_t block;
  uint32_t barrier;  // Barrier
  uint32_t want;
  uint32_t seen;
};

struct AllReduceKernelArgs {
  const unsigned char* source[kMaxRanks];  // each rank's input as mapped here: staging or sendbuff
  unsigned char* scratch[kMaxRanks];       // two-shot's reduced slices
  Signal* signal[kMaxRanks];
  const unsigned char* input;  // this rank's sendbuff
  unsigned char* staging;      // this rank's staging buffer (copy-in)
  unsigned char* output;       // this rank's recvbuff
  KernelStall* stall;
  uint64_t packs;
  uint64_t timeout_ns;  // every wait ends this long after the kernel started (globaltimer)
  int32_t rank;
  int32_t nranks;
  uint32_t epoch;
  int32_t copy_in;
};

// The kernels' entry points, one per (algorithm, element type), as the fatbin names them.
inline constexpr const char* kAllReduceKernelNames[2][3] = {
    {"ncclscope_allreduce_one_shot_fp16", "ncclscope_allreduce_one_shot_fp32",
     "ncclscope_allreduce_one_shot_bf16"},
    {"ncclscope_allreduce_two_shot_fp16", "ncclscope_allreduce_two_shot_fp32",
     "ncclscope_allreduce_two_shot_bf16"},
};

}  // namespace ncclscope::collectives
