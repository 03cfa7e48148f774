// cuGetProcAddress: the way the probe and CUDA runtime find driver entry points by base name.
#include <cstring>
#include <initializer_list>

#include "sim/emulator/cuda_exports.h"
#include "sim/emulator/sim_stream.h"

namespace {

struct Entry {
  const char* name;
  void* fn;
};

// Base names as cuGetProcAddress callers spell them; where cuda.h maps a name to a versioned
// variant, the versioned function is the one with the base name's current signature.
const Entry kEntries[] = {
#define E(name, fn) \
  { name, reinterpret_cast<void*>(&fn) }  // NOLINT(bugprone-macro-parentheses)
    E("cuInit", cuInit),
    E("cuDriverGetVersion", cuDriverGetVersion),
    E("cuDeviceGetCount", cuDeviceGetCount),
    E("cuDeviceGet", cuDeviceGet),
    E("cuDeviceGetName", cuDeviceGetName),
    E("cuDeviceGetUuid", cuDeviceGetUuid_v2),
    E("cuCtxGetCurrent", cuCtxGetCurrent),
    E("cuCtxSetCurrent", cuCtxSetCurrent),
    E("cuCtxGetDevice", cuCtxGetDevice),
    E("cuCtxPushCurrent", cuCtxPushCurrent_v2),
    E("cuCtxPopCurrent", cuCtxPopCurrent_v2),
    E("cuCtxCreate", cuCtxCreate_v4),
    E("cuCtxDestroy", cuCtxDestroy_v2),
    E("cuCtxSynchronize", cuCtxSynchronize),
    E("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
    E("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2),
    E("cuStreamCreate", cuStreamCreate),
    E("cuStreamCreateWithPriority", cuStreamCreateWithPriority),
    E("cuStreamDestroy", cuStreamDestroy_v2),
    E("cuStreamSynchronize", cuStreamSynchronize),
    E("cuStreamQuery", cuStreamQuery),
    E("cuStreamWaitEvent", cuStreamWaitEvent),
    E("cuEventCreate", cuEventCreate),
    E("cuEventRecord", cuEventRecord),
    E("cuEventRecordWithFlags", cuEventRecordWithFlags),
    E("cuEventQuery", cuEventQuery),
    E("cuEventSynchronize", cuEventSynchronize),
    E("cuEventDestroy", cuEventDestroy_v2),
    E("cuEventElapsedTime", cuEventElapsedTime_v2),
    E("cuLaunchHostFunc", cuLaunchHostFunc),
    E("cuStreamIsCapturing", cuStreamIsCapturing),
    E("cuDeviceGetAttribute", cuDeviceGetAttribute),
    E("cuDeviceCanAccessPeer", cuDeviceCanAccessPeer),
    E("cuCtxEnablePeerAccess", cuCtxEnablePeerAccess),
    E("cuMemAlloc", cuMemAlloc_v2),
    E("cuMemFree", cuMemFree_v2),
    E("cuMemsetD8", cuMemsetD8_v2),
    E("cuMemHostAlloc", cuMemHostAlloc),
    E("cuMemFreeHost", cuMemFreeHost),
    E("cuMemHostGetDevicePointer", cuMemHostGetDevicePointer_v2),
    E("cuMemcpy", cuMemcpy),
    E("cuMemcpyHtoD", cuMemcpyHtoD_v2),
    E("cuMemcpyDtoH", cuMemcpyDtoH_v2),
    E("cuMemcpyDtoD", cuMemcpyDtoD_v2),
    E("cuMemGetAddressRange", cuMemGetAddressRange_v2),
    E("cuPointerGetAttribute", cuPointerGetAttribute),
    E("cuIpcGetMemHandle", cuIpcGetMemHandle),
    E("cuIpcOpenMemHandle", cuIpcOpenMemHandle_v2),
    E("cuIpcCloseMemHandle", cuIpcCloseMemHandle),
    E("cuModuleLoadData", cuModuleLoadData),
    E("cuModuleGetFunction", cuModuleGetFunction),
    E("cuModuleUnload", cuModuleUnload),
    E("cuLaunchKernel", cuLaunchKernel),
    E("cuStreamBeginCapture", cuStreamBeginCapture_v2),
    E("cuStreamEndCapture", cuStreamEndCapture),
    E("cuGraphInstantiate", cuGraphInstantiateWithFlags),
    E("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags),
    E("cuGraphLaunch", cuGraphLaunch),
    E("cuGraphExecDestroy", cuGraphExecDestroy),
    E("cuGraphDestroy", cuGraphDestroy),
    E("cuGetErrorString", cuGetErrorString),
    E("cuGetErrorName", cuGetErrorName),
    E("cuGetProcAddress", cuGetProcAddress_v2),
#undef E
};

}  // namespace

namespace ncclsim {

void* findDriverSymbol(const char* name) {
  if (name == nullptr) return nullptr;
  size_t len = std::strlen(name);
  for (const char* suffix : {"_v2", "_v4", "_ptsz", "_ptds"}) {
    // Exact versioned names resolve to the same implementation as their base name.
    size_t sl = std::strlen(suffix);
    if (len > sl && std::strcmp(name + len - sl, suffix) == 0) len -= sl;
  }
  for (const Entry& e : kEntries) {
    if (std::strlen(e.name) == len && std::strncmp(e.name, name, len) == 0) return e.fn;
  }
  return nullptr;
}

}  // namespace ncclsim

extern "C" {

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pfn = ncclsim::findDriverSymbol(symbol);
  if (symbolStatus != nullptr) {
    *symbolStatus = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

// The pre-12.5 spelling without the status argument.
#undef cuGetProcAddress
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, nullptr);
}

}  // extern "C"
