// A GPU's UUID as the ring header carries it, read through the driver table.
#pragma once

#include <cuda.h>

#include <string>

#include "cuda/driver.h"

namespace ncclscope::cuda {

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi and dcgm-exporter print it. Pure.
std::string FormatGpuUuid(const CUuuid& uuid);

// The UUID of CUDA device `ordinal`; empty when the driver cannot say (it lacks cuDeviceGet or
// cuDeviceGetUuid, or they fail). Thread-safe.
std::string GpuUuidOf(const Driver& driver, int ordinal);

}  // namespace ncclscope::cuda
