#include "plugin/numerics_driver.h"

#include <dlfcn.h>

#include "plugin/driver_symbol.h"

namespace ncclscope::plugin {

bool LoadNumericsDriver(const std::string& library, NumericsDriver* driver, std::string* error) {
  void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = dlerror();
    *error = "cannot load " + library + ": " + (why != nullptr ? why : "unknown error");
    return false;
  }
  NumericsDriver d;
  const bool ok =
      BindDriverSymbol(h, "cuCtxGetCurrent", &d.ctx_get_current, error) &&
      BindDriverSymbol(h, "cuCtxGetDevice", &d.ctx_get_device, error) &&
      BindDriverSymbol(h, "cuDeviceGetAttribute", &d.device_get_attribute, error) &&
      BindDriverSymbol(h, "cuModuleLoadData", &d.module_load_data, error) &&
      BindDriverSymbol(h, "cuModuleGetFunction", &d.module_get_function, error) &&
      BindDriverSymbol(h, "cuLaunchKernel", &d.launch_kernel, error) &&
      BindDriverSymbol(h, "cuStreamIsCapturing", &d.stream_is_capturing, error) &&
      BindDriverSymbol(h, "cuMemHostAlloc", &d.mem_host_alloc, error) &&
      BindDriverSymbol(h, "cuMemHostGetDevicePointer_v2", &d.mem_host_get_device_pointer, error) &&
      BindDriverSymbol(h, "cuEventCreate", &d.event_create, error) &&
      BindDriverSymbol(h, "cuEventDestroy_v2", &d.event_destroy, error) &&
      BindDriverSymbol(h, "cuEventRecord", &d.event_record, error) &&
      BindDriverSymbol(h, "cuEventQuery", &d.event_query, error);
  if (ok) *driver = d;
  return ok;
}

}  // namespace ncclscope::plugin
