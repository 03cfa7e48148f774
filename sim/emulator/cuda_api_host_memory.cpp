// Emulated driver entry points for pinned host memory. Host and device share one address space
// here, so an allocation's device pointer is its host address, as with unified addressing on a
// GPU; only memory from cuMemHostAlloc has one.
#include <cstdlib>
#include <map>
#include <mutex>

#include "sim/emulator/cuda_exports.h"

namespace {

struct Pinned {
  std::mutex mu;
  std::map<uintptr_t, size_t> bytes_by_base;
};

Pinned& pinned() {
  static auto* p = new Pinned;  // leaked: stream work may touch it during static destruction
  return *p;
}

constexpr unsigned kKnownFlags =
    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;

}  // namespace

extern "C" {

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  if (pp == nullptr || bytesize == 0 || (Flags & ~kKnownFlags) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytesize) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(pinned().mu);
  pinned().bytes_by_base[uintptr_t(p)] = bytesize;
  *pp = p;
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void* p) {
  std::lock_guard<std::mutex> lock(pinned().mu);
  if (pinned().bytes_by_base.erase(uintptr_t(p)) == 0) return CUDA_ERROR_INVALID_VALUE;
  std::free(p);
  return CUDA_SUCCESS;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags) {
  if (pdptr == nullptr || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(pinned().mu);
  const auto& all = pinned().bytes_by_base;
  auto it = all.upper_bound(uintptr_t(p));
  if (it == all.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if (uintptr_t(p) - it->first >= it->second) return CUDA_ERROR_INVALID_VALUE;
  *pdptr = CUdeviceptr(uintptr_t(p));
  return CUDA_SUCCESS;
}

}  // extern "C"
