// A CUDA driver table for NumericsProbe (cuda/driver.h) without a GPU, shared by the
// probe's unit test and its benchmark: launches either run the kernels' CPU twins at once (so
// results are real) or do nothing; events fire when the state says so. One state at a time
// (g_fake_numerics), set by the user before the probe loads the table.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "collectives/numerics/numerics_kernel_args.h"
#include "collectives/numerics/numerics_twin.h"
#include "cuda/driver.h"

namespace ncclscope::testing {

struct FakeNumericsDriver {
  bool run_twins = true;     // launches compute their results (else they only count)
  bool capturing = false;    // every stream reads as being captured into a graph
  bool events_done = false;  // cuEventQuery says the work finished
  int events_recorded = 0;
  std::vector<std::string> launches;  // kernel names in launch order (when run_twins)
  std::vector<void*> pinned;          // the probe keeps its results for good; freed here
  ~FakeNumericsDriver() {
    for (void* p : pinned) std::free(p);
  }
};

inline FakeNumericsDriver* g_fake_numerics = nullptr;

namespace fake_numerics {

namespace nc = collectives;

inline CUresult CtxGetCurrent(CUcontext* c) {
  *c = reinterpret_cast<CUcontext>(0x1);
  return CUDA_SUCCESS;
}
inline CUresult CtxGetDevice(CUdevice* d) {
  *d = 0;
  return CUDA_SUCCESS;
}
inline CUresult DeviceGetAttribute(int* v, CUdevice_attribute, CUdevice) {
  *v = 2;
  return CUDA_SUCCESS;
}
inline CUresult ModuleLoadData(CUmodule* m, const void*) {
  *m = reinterpret_cast<CUmodule>(0x2);
  return CUDA_SUCCESS;
}
// The fake module's functions are the kernel names themselves.
inline CUresult ModuleGetFunction(CUfunction* f, CUmodule, const char* name) {
  *f = reinterpret_cast<CUfunction>(const_cast<char*>(name));
  return CUDA_SUCCESS;
}
inline CUresult LaunchKernel(CUfunction f, unsigned gx, unsigned, unsigned, unsigned bx, unsigned,
                             unsigned, unsigned, CUstream, void** params, void**) {
  if (!g_fake_numerics->run_twins) return CUDA_SUCCESS;
  const std::string name = reinterpret_cast<const char*>(f);
  g_fake_numerics->launches.push_back(name);
  if (name == nc::kContentHashKernelName) {
    nc::RunContentHashTwinKernel(*static_cast<const nc::ContentHashArgs*>(params[0]), gx, bx);
    return CUDA_SUCCESS;
  }
  for (uint32_t i = 0; i < 6; ++i) {
    if (name == nc::kNumericScanKernelNames[i]) {
      nc::RunNumericScanTwinKernel(static_cast<nc::NumericFormat>(i + 1),
                                   *static_cast<const nc::NumericScanArgs*>(params[0]), gx, bx);
    }
  }
  return CUDA_SUCCESS;
}
inline CUresult StreamIsCapturing(CUstream, CUstreamCaptureStatus* s) {
  *s = g_fake_numerics->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
inline CUresult MemHostAlloc(void** p, size_t bytes, unsigned int) {
  *p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (*p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  g_fake_numerics->pinned.push_back(*p);
  return CUDA_SUCCESS;
}
inline CUresult MemHostGetDevicePointer(CUdeviceptr* d, void* p, unsigned int) {
  *d = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
inline CUresult EventCreate(CUevent* e, unsigned int) {
  *e = reinterpret_cast<CUevent>(0x3);
  return CUDA_SUCCESS;
}
inline CUresult EventDestroy(CUevent) {
  return CUDA_SUCCESS;
}
inline CUresult EventRecord(CUevent, CUstream) {
  ++g_fake_numerics->events_recorded;
  return CUDA_SUCCESS;
}
inline CUresult EventQuery(CUevent) {
  return g_fake_numerics->events_done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

}  // namespace fake_numerics

// NumericsProbe's DriverLoader for the fake.
inline bool LoadFakeNumericsDriver(const std::string&, cuda::Driver* d, std::string*) {
  using namespace fake_numerics;  // NOLINT(google-build-using-namespace): the table's functions
  d->ctx_get_current = CtxGetCurrent;
  d->ctx_get_device = CtxGetDevice;
  d->device_get_attribute = DeviceGetAttribute;
  d->module_load_data = ModuleLoadData;
  d->module_get_function = ModuleGetFunction;
  d->launch_kernel = LaunchKernel;
  d->stream_is_capturing = StreamIsCapturing;
  d->mem_host_alloc = MemHostAlloc;
  d->mem_host_get_device_pointer = MemHostGetDevicePointer;
  d->event_create = EventCreate;
  d->event_destroy = EventDestroy;
  d->event_record = EventRecord;
  d->event_query = EventQuery;
  return true;
}

}  // namespace ncclscope::testing
