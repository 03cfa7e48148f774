// The CUDA driver functions NCCLSCOPE_NUMERICS needs (its module, launches, pinned results,
// events), as a table of pointers from the lazily opened driver: nothing is loaded unless a
// sampled collective comes (docs/collectives.md, "Numerics in a job").
#pragma once

#include <cuda.h>

#include <string>

namespace ncclscope::plugin {

struct NumericsDriver {
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;
  CUresult (*ctx_get_device)(CUdevice*) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*stream_is_capturing)(CUstream, CUstreamCaptureStatus*) = nullptr;
  CUresult (*mem_host_alloc)(void**, size_t, unsigned int) = nullptr;
  CUresult (*mem_host_get_device_pointer)(CUdeviceptr*, void*, unsigned int) = nullptr;
  CUresult (*event_create)(CUevent*, unsigned int) = nullptr;
  CUresult (*event_destroy)(CUevent) = nullptr;
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*event_query)(CUevent) = nullptr;
};

// dlopen()s `library` (never closed) and fills *driver with the versioned names cuda.h maps these
// functions to. False with *error naming the library or the first symbol missing. Thread-safe.
bool LoadNumericsDriver(const std::string& library, NumericsDriver* driver, std::string* error);

}  // namespace ncclscope::plugin
