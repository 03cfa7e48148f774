// Whether a stream is being captured into a CUDA graph (cuda_api_module.cpp records its kernel
// launches): what cuStreamIsCapturing reports.
#pragma once

#include <cuda.h>

namespace ncclsim {

bool streamCapturing(CUstream s);

}  // namespace ncclsim
