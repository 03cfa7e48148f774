// Emulated driver entry points for initialization, devices, contexts and error strings. Contexts
// are placeholders: one per device, never destroyed; the NCCL emulator does not need them.
#include <cstdio>
#include <cstring>
#include <vector>

#include "sim/emulator/cuda_exports.h"
#include "sim/emulator/env_config.h"

namespace ncclsim {

int deviceCount() {
  static const int n = int(envLong("NCCLSIM_DEVICE_COUNT", 8, 1, 64));
  return n;
}

}  // namespace ncclsim

namespace {

struct FakeContext {
  int device;
};

FakeContext* contextOf(int dev) {
  static FakeContext* all = [] {
    auto* c = new FakeContext[64];
    for (int i = 0; i < 64; ++i) c[i].device = i;
    return c;
  }();
  return &all[dev];
}

// A thread starts on the primary context of device 0, as after cudaSetDevice(0) in a job.
thread_local CUcontext t_current = reinterpret_cast<CUcontext>(contextOf(0));
thread_local std::vector<CUcontext> t_stack;

}  // namespace

extern "C" {

CUresult cuInit(unsigned int flags) {
  return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = ncclsim::deviceCount();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!ncclsim::validDevice(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!ncclsim::validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, size_t(len), "ncclsim CPU device %d", int(dev));
  return CUDA_SUCCESS;
}

// A fixed fake UUID per device ("GPU-6e637369-6d00-0000-0000-0000000000<dev>"): tests of the
// dcgm join need one that is stable across runs and distinct per device.
CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!ncclsim::validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  static constexpr char kPrefix[] = {'n', 'c', 's', 'i', 'm'};
  std::memset(uuid->bytes, 0, sizeof uuid->bytes);
  std::memcpy(uuid->bytes, kPrefix, sizeof kPrefix);
  uuid->bytes[15] = static_cast<char>(dev);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pctx = t_current;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  t_current = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *device = reinterpret_cast<FakeContext*>(t_current)->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx) {
  t_stack.push_back(t_current);
  t_current = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext* pctx) {
  if (pctx != nullptr) *pctx = t_current;
  if (t_stack.empty()) {
    t_current = nullptr;
  } else {
    t_current = t_stack.back();
    t_stack.pop_back();
  }
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!ncclsim::validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *pctx = reinterpret_cast<CUcontext>(contextOf(dev));
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return ncclsim::validDevice(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuCtxCreate(CUcontext* pctx, CUctxCreateParams* params, unsigned int flags, CUdevice dev) {
  CUresult r = cuDevicePrimaryCtxRetain(pctx, dev);
  if (r == CUDA_SUCCESS) t_current = *pctx;
  return r;
}

CUresult cuCtxDestroy(CUcontext ctx) {
  if (t_current == ctx) t_current = nullptr;
  return CUDA_SUCCESS;
}

}  // extern "C"

namespace {

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

// Only the codes this emulator can return get a description; others report as unknown.
constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "driver not initialized"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_MAP_FAILED, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
};

const ErrorText* findError(CUresult code) {
  for (const ErrorText& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

}  // namespace

extern "C" {

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = findError(error);
  *pStr = e ? e->text : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* e = findError(error);
  *pStr = e ? e->name : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"

// The pre-11.4 name (cuda.h maps cuDeviceGetUuid to _v2); the signatures agree.
#undef cuDeviceGetUuid
extern "C"
    __attribute__((alias("cuDeviceGetUuid_v2"))) decltype(cuDeviceGetUuid_v2) cuDeviceGetUuid;
