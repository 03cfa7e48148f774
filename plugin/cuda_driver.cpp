#include "plugin/cuda_driver.h"

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

bool LoadCudaDriver(const std::string& library, CudaDriver* driver, std::string* error) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *error = "cannot load " + library + ": " + (why != nullptr ? why : "unknown error");
    return false;
  }
  // Explicit versioned names: cuda.h maps the unversioned ones to these with macros.
  CudaDriver d;
  if (!Bind(handle, "cuInit", &d.init, error) ||
      !Bind(handle, "cuCtxGetCurrent", &d.ctx_get_current, error) ||
      !Bind(handle, "cuEventCreate", &d.event_create, error) ||
      !Bind(handle, "cuEventRecord", &d.event_record, error) ||
      !Bind(handle, "cuEventQuery", &d.event_query, error) ||
      !Bind(handle, "cuEventDestroy_v2", &d.event_destroy, error)) {
    return false;
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
