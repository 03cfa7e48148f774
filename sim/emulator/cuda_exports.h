// Shared declarations of the emulated libcuda.so.1 translation units.
#pragma once

#include <cuda.h>

namespace ncclsim {

// Number of emulated devices: NCCLSIM_DEVICE_COUNT (1..64, default 8). Thread-safe.
int deviceCount();

// Whether `d` is the ordinal of an emulated device. Thread-safe.
inline bool validDevice(CUdevice d) {
  return d >= 0 && d < deviceCount();
}

// Address of our implementation of driver entry point `name` (cuda.h's base name, e.g.
// "cuStreamDestroy", or an exported versioned name), or nullptr. Thread-safe.
void* findDriverSymbol(const char* name);

}  // namespace ncclsim
