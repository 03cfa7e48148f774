// Emulated driver entry points for device memory (device_memory.h): allocation, synchronous
// copies and fills, and pointer queries. Copies and fills are plain memcpy/memset on the calling
// thread: unlike a real driver's, they are not ordered after work queued on the default stream.
#include <cstring>
#include <mutex>

#include "sim/emulator/cuda_exports.h"
#include "sim/emulator/device_memory.h"
#include "sim/emulator/driver_faults.h"

namespace {

// ncclsimSetDeviceMemoryLimit: this process's live allocations against the limit (0: none).
std::mutex g_budget_mu;
size_t g_limit = 0;
size_t g_live = 0;

// The host address of [dptr, dptr + bytes) when it lies in one emulated allocation or mapping.
void* deviceBytes(CUdeviceptr dptr, size_t bytes) {
  if (!ncclsim::findDeviceRange(uintptr_t(dptr), bytes, nullptr)) return nullptr;
  return reinterpret_cast<void*>(uintptr_t(dptr));
}

}  // namespace

extern "C" {

void ncclsimSetDeviceMemoryLimit(size_t bytes) {
  std::lock_guard<std::mutex> lock(g_budget_mu);
  g_limit = bytes;
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  std::lock_guard<std::mutex> lock(g_budget_mu);
  if (g_limit != 0 && (bytesize > g_limit || g_live > g_limit - bytesize)) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  const CUresult rc = ncclsim::allocateDeviceMemory(bytesize, dptr);
  if (rc == CUDA_SUCCESS) g_live += bytesize;
  return rc;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  ncclsim::DeviceRange range;
  const bool known = ncclsim::findDeviceRange(uintptr_t(dptr), 0, &range);
  const CUresult rc = ncclsim::freeDeviceMemory(dptr);
  if (rc == CUDA_SUCCESS && known) {
    std::lock_guard<std::mutex> lock(g_budget_mu);
    g_live -= range.bytes;
  }
  return rc;
}

CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  void* dst = deviceBytes(dstDevice, N);
  if (dst == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memset(dst, uc, N);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  void* dst = deviceBytes(dstDevice, ByteCount);
  if (dst == nullptr || (srcHost == nullptr && ByteCount > 0)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, srcHost, ByteCount);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  void* src = deviceBytes(srcDevice, ByteCount);
  if (src == nullptr || (dstHost == nullptr && ByteCount > 0)) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dstHost, src, ByteCount);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  void* dst = deviceBytes(dstDevice, ByteCount);
  void* src = deviceBytes(srcDevice, ByteCount);
  if (dst == nullptr || src == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memmove(dst, src, ByteCount);
  return CUDA_SUCCESS;
}

// Unified addressing: either side may be host memory, as with a real driver's cuMemcpy.
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  if ((dst == 0 || src == 0) && ByteCount > 0) return CUDA_ERROR_INVALID_VALUE;
  std::memmove(reinterpret_cast<void*>(uintptr_t(dst)), reinterpret_cast<void*>(uintptr_t(src)),
               ByteCount);
  return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  ncclsim::DeviceRange range;
  if (!ncclsim::findDeviceRange(uintptr_t(dptr), 0, &range)) return CUDA_ERROR_NOT_FOUND;
  if (pbase != nullptr) *pbase = CUdeviceptr(range.base);
  if (psize != nullptr) *psize = range.bytes;
  return CUDA_SUCCESS;
}

// The attributes a caller needs to find an allocation and its kind; host memory is not the
// driver's, so every attribute of it is CUDA_ERROR_INVALID_VALUE.
CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  ncclsim::DeviceRange range;
  if (data == nullptr || !ncclsim::findDeviceRange(uintptr_t(ptr), 0, &range)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = CUdeviceptr(range.base);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = range.bytes;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

}  // extern "C"

// Per-thread-default-stream names of the same synchronous copies (the emulator has one default
// stream), for callers that dlsym them directly.
#define NCCLSIM_ALIAS(name, target) \
  extern "C" __attribute__((        \
      alias(#target))) decltype(target) name;  // NOLINT(bugprone-macro-parentheses): a declarator
NCCLSIM_ALIAS(cuMemsetD8_v2_ptds, cuMemsetD8_v2)
NCCLSIM_ALIAS(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD_v2)
NCCLSIM_ALIAS(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH_v2)
NCCLSIM_ALIAS(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD_v2)
NCCLSIM_ALIAS(cuMemcpy_ptds, cuMemcpy)
