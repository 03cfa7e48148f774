// The emulated GPU's memory: each cuMemAlloc is its own POSIX shared memory object, so another rank
// process can map it through an IPC handle as a real driver maps a peer GPU's allocation. Names
// are "/ncclsim-<job tag>-dm<pid hex>-<serial hex>" (the launcher removes "/ncclsim-<tag>-*").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda.h>

namespace ncclsim {

// One mapped range of emulated device memory: an allocation of this process, or another
// process's allocation opened through an IPC handle.
struct DeviceRange {
  uintptr_t base = 0;
  size_t bytes = 0;
  std::string segment;  // shared memory object name
  bool imported = false;
};

// Creates, sizes and maps a new object of `bytes` (> 0). CUDA_ERROR_OUT_OF_MEMORY when the system
// refuses. Thread-safe.
CUresult allocateDeviceMemory(size_t bytes, CUdeviceptr* out);

// Unmaps and unlinks the allocation whose base is `base`; CUDA_ERROR_INVALID_VALUE for any other
// pointer (interior, imported, host, already freed). Thread-safe.
CUresult freeDeviceMemory(CUdeviceptr base);

// The range containing [p, p + bytes) (bytes 0 counts as 1), if any. Thread-safe.
bool findDeviceRange(uintptr_t p, size_t bytes, DeviceRange* out);

// Maps another process's object `segment` (its whole size) or, when it is mapped already, counts
// one more opening of it and returns the same base, as the driver does for a handle opened twice.
// CUDA_ERROR_INVALID_CONTEXT for this process's own allocation (the driver refuses a handle in the
// process that exported it), CUDA_ERROR_INVALID_HANDLE when no such object exists,
// CUDA_ERROR_MAP_FAILED when it cannot be mapped. Thread-safe.
CUresult openSegment(const std::string& segment, CUdeviceptr* base);

// Counts one closing of the mapping openSegment returned at `base`; unmaps it at the last.
// CUDA_ERROR_INVALID_VALUE for any other pointer. Thread-safe.
CUresult closeSegment(CUdeviceptr base);

}  // namespace ncclsim
