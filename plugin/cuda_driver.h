// The subset of the CUDA driver API the completion tracker uses, as a table of function pointers so
// that tests substitute a fake and production code never links libcuda.
#pragma once

#include <cuda.h>

#include <string>

namespace ncclscope::plugin {

struct CudaDriver {
  CUresult (*init)(unsigned int flags) = nullptr;
  CUresult (*ctx_get_current)(CUcontext* ctx) = nullptr;
  CUresult (*event_create)(CUevent* event, unsigned int flags) = nullptr;
  CUresult (*event_record)(CUevent event, CUstream stream) = nullptr;
  CUresult (*event_query)(CUevent event) = nullptr;
  CUresult (*event_destroy)(CUevent event) = nullptr;
  // Optional (null when the driver lacks them): the GPU's UUID for the ring header.
  CUresult (*device_get)(CUdevice* device, int ordinal) = nullptr;
  CUresult (*device_get_uuid)(CUuuid* uuid, CUdevice device) = nullptr;
};

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi and dcgm-exporter print it. Pure.
std::string FormatGpuUuid(const CUuuid& uuid);
// The UUID of CUDA device `ordinal` through the driver table; empty when the driver cannot say.
// Thread-safe.
std::string GpuUuidOf(const CudaDriver& driver, int ordinal);

// dlopen()s library (never closed) and fills *driver, then calls cuInit(0). Returns false with
// *error set when the library, a symbol or cuInit fails. Thread-safe (dlopen is).
bool LoadCudaDriver(const std::string& library, CudaDriver* driver, std::string* error);

}  // namespace ncclscope::plugin
