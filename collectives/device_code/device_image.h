// One kernel source's device code as the library carries it: a fatbin of sm_80, sm_90 and sm_100
// cubins plus sm_90 PTX, embedded at build time (embedded_fatbin.h) when the build machine has
// nvcc. The driver API loads it lazily (cuModuleLoadData) in a process that launches the kernels;
// nothing reads it otherwise. Each room that embeds an image has its own accessor: device_code.h
// for the collectives' kernels, numerics/numerics_fatbin.h for the numerics passes.
#pragma once

#include <cstddef>

namespace ncclscope::collectives {

struct DeviceImage {
  const unsigned char* data = nullptr;
  size_t size = 0;  // 0: built without nvcc, no kernels (every call goes to NCCL)
};

}  // namespace ncclscope::collectives
