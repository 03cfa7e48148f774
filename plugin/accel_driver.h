// The CUDA driver functions ncclscope's own collectives need (device memory, IPC handles, the
// module of its kernels, launches), as a table of pointers from the lazily opened driver: nothing
// is loaded or allocated unless NCCLSCOPE_ACCEL routes a call (docs/collectives.md).
#pragma once

#include <cuda.h>

#include <string>

namespace ncclscope::plugin {

struct AccelDriver {
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*ipc_get_mem_handle)(CUipcMemHandle*, CUdeviceptr) = nullptr;
  CUresult (*ipc_open_mem_handle)(CUdeviceptr*, CUipcMemHandle, unsigned int) = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*stream_create)(CUstream*, unsigned int) = nullptr;
  CUresult (*stream_synchronize)(CUstream) = nullptr;
  CUresult (*stream_is_capturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*mem_host_alloc)(void**, size_t, unsigned int) = nullptr;
  CUresult (*mem_host_get_device_pointer)(CUdeviceptr*, void*, unsigned int) = nullptr;
  CUresult (*event_create)(CUevent*, unsigned int) = nullptr;
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*stream_wait_event)(CUstream, CUevent, unsigned int) = nullptr;
};

// dlopen()s `library` (never closed; the completion tracker opens the same one) and fills *driver
// with the versioned names cuda.h maps these functions to. False with *error naming the first
// symbol missing.
bool LoadAccelDriver(const std::string& library, AccelDriver* driver, std::string* error);

}  // namespace ncclscope::plugin
