// The device code of ncclscope's own kernels, embedded in the library at build time (a fatbin of
// sm_80, sm_90 and sm_100 cubins plus sm_90 PTX, built by nvcc when the build machine has it). The
// driver API loads it lazily (cuModuleLoadData) in a process that enables acceleration; nothing
// reads it otherwise.
#pragma once

#include <cstddef>

namespace ncclscope::collectives {

struct DeviceImage {
  const unsigned char* data = nullptr;
  size_t size = 0;  // 0: built without nvcc, no kernels (every call goes to NCCL)
};

DeviceImage AllReduceFatbin() noexcept;
// The all-to-all kernel (kernels/alltoall.cu), a fatbin of its own built with the same flags.
DeviceImage AlltoAllFatbin() noexcept;
// The grouped send/recv exchange kernel (kernels/exchange.cu), likewise.
DeviceImage ExchangeFatbin() noexcept;
// The numerics passes' kernels (kernels/numerics.cu: NaN/Inf scan, content hash), likewise; the
// probe loads it when numerics sampling is on (plugin/numerics_probe.cpp).
DeviceImage NumericsFatbin() noexcept;

}  // namespace ncclscope::collectives
