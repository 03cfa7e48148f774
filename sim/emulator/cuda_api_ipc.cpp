// Emulated driver entry points for IPC memory handles. A handle names the shared memory object of
// the allocation containing the pointer; opening it maps that object and, as a real driver does,
// returns the allocation's base (cuda.h: cuIpcGetMemHandle "takes a pointer to the base"; NCCL
// 2.28.9 src/transport/p2p.cc p2pProxyRegister adds its own offset to what cudaIpcOpenMemHandle
// returns).
#include <atomic>
#include <cstring>
#include <string>

#include "sim/emulator/cuda_exports.h"
#include "sim/emulator/device_memory.h"
#include "sim/emulator/driver_faults.h"
#include "sim/emulator/env_config.h"

namespace {

// Layout of CUipcMemHandle::reserved: this tag, then the object's name, NUL-terminated.
constexpr char kHandleTag[4] = {'n', 's', 'i', 'm'};
constexpr size_t kNameRoom = CU_IPC_HANDLE_SIZE - sizeof kHandleTag;

std::atomic<bool> g_open_fails{false};  // ncclsimSetIpcOpenFails

}  // namespace

extern "C" {

CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  ncclsim::DeviceRange range;
  if (pHandle == nullptr || !ncclsim::findDeviceRange(uintptr_t(dptr), 0, &range) ||
      range.imported) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (range.segment.size() >= kNameRoom) {
    // Only with a job tag of more than about 28 characters.
    ncclsim::warnOnce("ipc-name", "shared memory name " + range.segment +
                                      " does not fit an IPC handle: shorten NCCLSIM_JOB_TAG");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  std::memset(pHandle->reserved, 0, sizeof pHandle->reserved);
  std::memcpy(pHandle->reserved, kHandleTag, sizeof kHandleTag);
  std::memcpy(pHandle->reserved + sizeof kHandleTag, range.segment.c_str(),
              range.segment.size() + 1);
  return CUDA_SUCCESS;
}

void ncclsimSetIpcOpenFails(int fails) {
  g_open_fails.store(fails != 0, std::memory_order_relaxed);
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags) {
  if (g_open_fails.load(std::memory_order_relaxed)) return CUDA_ERROR_MAP_FAILED;
  if (pdptr == nullptr || std::memcmp(handle.reserved, kHandleTag, sizeof kHandleTag) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const char* name = handle.reserved + sizeof kHandleTag;
  const size_t len = strnlen(name, kNameRoom);
  if (len == 0 || len == kNameRoom) return CUDA_ERROR_INVALID_VALUE;
  return ncclsim::openSegment(std::string(name, len), pdptr);
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  return ncclsim::closeSegment(dptr);
}

}  // extern "C"

// The pre-11.0 name; the signatures agree.
#undef cuIpcOpenMemHandle
extern "C" __attribute__((
    alias("cuIpcOpenMemHandle_v2"))) decltype(cuIpcOpenMemHandle_v2) cuIpcOpenMemHandle;
