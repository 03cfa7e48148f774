#include "plugin/cuda_driver.h"

#include <dlfcn.h>

#include <cstdio>

#include "plugin/driver_symbol.h"

namespace ncclscope::plugin {
std::string FormatGpuUuid(const CUuuid& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char text[48];
  std::snprintf(text, sizeof text,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return text;
}

std::string GpuUuidOf(const CudaDriver& driver, int ordinal) {
  CUdevice device = 0;
  CUuuid uuid{};
  if (driver.device_get == nullptr || driver.device_get_uuid == nullptr || ordinal < 0 ||
      driver.device_get(&device, ordinal) != CUDA_SUCCESS ||
      driver.device_get_uuid(&uuid, device) != CUDA_SUCCESS) {
    return "";
  }
  return FormatGpuUuid(uuid);
}

bool LoadCudaDriver(const std::string& library, CudaDriver* driver, std::string* error) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = "cannot load " + library + ": " + (why != nullptr ? why : "unknown error");
    return false;
  }
  // Explicit versioned names: cuda.h maps the unversioned ones to these with macros.
  CudaDriver d;
  if (!BindDriverSymbol(handle, "cuInit", &d.init, error) ||
      !BindDriverSymbol(handle, "cuCtxGetCurrent", &d.ctx_get_current, error) ||
      !BindDriverSymbol(handle, "cuEventCreate", &d.event_create, error) ||
      !BindDriverSymbol(handle, "cuEventRecord", &d.event_record, error) ||
      !BindDriverSymbol(handle, "cuEventQuery", &d.event_query, error) ||
      !BindDriverSymbol(handle, "cuEventDestroy_v2", &d.event_destroy, error)) {
    return false;
  }
  // The UUID is nice to have: a driver without these still tracks completion. _v2 is the name
  // cuda.h maps cuDeviceGetUuid to since CUDA 11.4; older drivers have only the first.
  d.device_get = reinterpret_cast<decltype(d.device_get)>(dlsym(handle, "cuDeviceGet"));
  d.device_get_uuid =
      reinterpret_cast<decltype(d.device_get_uuid)>(dlsym(handle, "cuDeviceGetUuid_v2"));
  if (d.device_get_uuid == nullptr) {
    d.device_get_uuid =
        reinterpret_cast<decltype(d.device_get_uuid)>(dlsym(handle, "cuDeviceGetUuid"));
  }
  const CUresult rc = d.init(0);
  if (rc != CUDA_SUCCESS) {
    *error = "cuInit failed with CUresult " + std::to_string(static_cast<int>(rc));
    return false;
  }
  *driver = d;
  return true;
}

}  // namespace ncclscope::plugin
