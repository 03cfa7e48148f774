// What the host passes to ncclscope's all-to-all kernel (by value, as the launch's one parameter).
// Shared by the CUDA source and the host side that launches it; the CPU twin takes the same facts
// as AlltoAllTwinCall and AlltoAllPeerMemory. A wait that expires is reported in a KernelStall,
// as the AllReduce kernels do.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/planner/allreduce_kernel_args.h"
#include "collectives/planner/epoch.h"

namespace ncclscope::collectives {

struct AlltoAllKernelArgs {
  const unsigned char* source[kMaxRanks];  // each rank's input as mapped here: staging or sendbuff
  Signal* signal[kMaxRanks];
  const unsigned char* input;  // this rank's sendbuff
  unsigned char* staging;      // this rank's staging buffer (copy-in)
  unsigned char* output;       // this rank's recvbuff
  KernelStall* stall;
  uint64_t packs_per_peer;  // count x element size / kPackBytes
  uint64_t timeout_ns;      // every wait ends this long after the kernel started (globaltimer)
  int32_t rank;
  int32_t nranks;
  uint32_t epoch;
  int32_t copy_in;
};

// The kernel's entry point as the fatbin names it: one for every data type (it moves bytes).
inline constexpr const char* kAlltoAllKernelName = "ncclscope_alltoall_pull";

}  // namespace ncclscope::collectives
