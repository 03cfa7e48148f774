#include "plugin/accel_driver.h"

#include <dlfcn.h>

namespace ncclscope::plugin {
namespace {

template <typename F>
bool Bind(void* handle, const char* name, F* out, std::string* error) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  if (*out == nullptr) *error = std::string("symbol ") + name + " missing from the CUDA driver";
  return *out != nullptr;
}

}  // namespace

bool LoadAccelDriver(const std::string& library, AccelDriver* driver, std::string* error) {
  void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = dlerror();
    *error = "cannot load " + library + ": " + (why != nullptr ? why : "unknown error");
    return false;
  }
  AccelDriver d;
  const bool ok = Bind(h, "cuCtxGetDevice", &d.ctx_get_device, error) &&
                  Bind(h, "cuDeviceGetAttribute", &d.device_get_attribute, error) &&
                  Bind(h, "cuMemAlloc_v2", &d.mem_alloc, error) &&
                  Bind(h, "cuMemFree_v2", &d.mem_free, error) &&
                  Bind(h, "cuMemsetD8_v2", &d.memset_d8, error) &&
                  Bind(h, "cuMemcpyHtoD_v2", &d.memcpy_htod, error) &&
                  Bind(h, "cuMemcpyDtoH_v2", &d.memcpy_dtoh, error) &&
                  Bind(h, "cuIpcGetMemHandle", &d.ipc_get_mem_handle, error) &&
                  Bind(h, "cuIpcOpenMemHandle_v2", &d.ipc_open_mem_handle, error) &&
                  Bind(h, "cuModuleLoadData", &d.module_load_data, error) &&
                  Bind(h, "cuModuleGetFunction", &d.module_get_function, error) &&
                  Bind(h, "cuLaunchKernel", &d.launch_kernel, error) &&
                  Bind(h, "cuStreamCreate", &d.stream_create, error) &&
                  Bind(h, "cuStreamSynchronize", &d.stream_synchronize, error) &&
                  Bind(h, "cuStreamIsCapturing", &d.stream_is_capturing, error) &&
                  Bind(h, "cuMemHostAlloc", &d.mem_host_alloc, error) &&
                  Bind(h, "cuMemHostGetDevicePointer_v2", &d.mem_host_get_device_pointer, error) &&
                  Bind(h, "cuEventCreate", &d.event_create, error) &&
                  Bind(h, "cuEventRecord", &d.event_record, error) &&
                  Bind(h, "cuStreamWaitEvent", &d.stream_wait_event, error);
  if (ok) *driver = d;
  return ok;
}

}  // namespace ncclscope::plugin
