// The CUDA driver as the GPU check calls it: ncclscope's one driver table (cuda/driver.h), found at
// run time with dlopen("libcuda.so.1"), so one binary built on a machine without a GPU runs on one
// with a driver (and, in CI, on the emulator's libcuda.so.1, docs/emulator.md). Nothing links
// against CUDA.
#pragma once

#include <string>

#include "cuda/driver.h"

namespace ncclscope::gpu_check {

using Driver = cuda::Driver;
using cuda::ErrorText;

// Loads libcuda.so.1 (never closed) into *d. False with *error naming the library or the first
// function the check needs that it lacks. Thread-safe.
inline bool LoadDriver(Driver* d, std::string* error) {
  return cuda::LoadDriverFor(cuda::kUseGpuCheck, "libcuda.so.1", d, error);
}

}  // namespace ncclscope::gpu_check
