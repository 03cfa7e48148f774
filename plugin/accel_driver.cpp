#include "plugin/accel_driver.h"

#include <dlfcn.h>

#include "plugin/driver_symbol.h"

namespace ncclscope::plugin {
bool LoadAccelDriver(const std::string& library, AccelDriver* driver, std::string* error) {
  void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = dlerror();
    *error = "cannot load " + library + ": " + (why != nullptr ? why : "unknown error");
    return false;
  }
  AccelDriver d;
  const bool ok =
      BindDriverSymbol(h, "cuCtxGetDevice", &d.ctx_get_device, error) &&
      BindDriverSymbol(h, "cuDeviceGetAttribute", &d.device_get_attribute, error) &&
      BindDriverSymbol(h, "cuMemAlloc_v2", &d.mem_alloc, error) &&
      BindDriverSymbol(h, "cuMemFree_v2", &d.mem_free, error) &&
      BindDriverSymbol(h, "cuMemsetD8_v2", &d.memset_d8, error) &&
      BindDriverSymbol(h, "cuMemcpyHtoD_v2", &d.memcpy_htod, error) &&
      BindDriverSymbol(h, "cuMemcpyDtoH_v2", &d.memcpy_dtoh, error) &&
      BindDriverSymbol(h, "cuIpcGetMemHandle", &d.ipc_get_mem_handle, error) &&
      BindDriverSymbol(h, "cuIpcOpenMemHandle_v2", &d.ipc_open_mem_handle, error) &&
      BindDriverSymbol(h, "cuModuleLoadData", &d.module_load_data, error) &&
      BindDriverSymbol(h, "cuModuleGetFunction", &d.module_get_function, error) &&
      BindDriverSymbol(h, "cuLaunchKernel", &d.launch_kernel, error) &&
      BindDriverSymbol(h, "cuStreamCreate", &d.stream_create, error) &&
      BindDriverSymbol(h, "cuStreamSynchronize", &d.stream_synchronize, error) &&
      BindDriverSymbol(h, "cuStreamIsCapturing", &d.stream_is_capturing, error) &&
      BindDriverSymbol(h, "cuMemHostAlloc", &d.mem_host_alloc, error) &&
      BindDriverSymbol(h, "cuMemHostGetDevicePointer_v2", &d.mem_host_get_device_pointer, error) &&
      BindDriverSymbol(h, "cuEventCreate", &d.event_create, error) &&
      BindDriverSymbol(h, "cuEventRecord", &d.event_record, error) &&
      BindDriverSymbol(h, "cuStreamWaitEvent", &d.stream_wait_event, error);
  if (ok) *driver = d;
  return ok;
}

}  // namespace ncclscope::plugin
