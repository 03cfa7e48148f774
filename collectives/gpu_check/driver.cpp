#include "collectives/gpu_check/driver.h"

#include <dlfcn.h>

#include <initializer_list>

namespace ncclscope::gpu_check {
namespace {

// The first of `names` the library has (cuda.h's versioned name first, then the older one).
template <typename Fn>
bool Bind(void* lib, std::initializer_list<const char*> names, Fn* slot) {
  for (const char* name : names) {
    if (void* p = dlsym(lib, name)) {
      *slot = reinterpret_cast<Fn>(p);
      return true;
    }
  }
  return false;
}

}  // namespace

bool LoadDriver(Driver* d, std::string* error) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    *error = std::string("cannot load libcuda.so.1: ") + (why != nullptr ? why : "?");
    return false;
  }
  Driver x;
  struct Required {
    bool ok;
    const char* name;
  };
  const Required required[] = {
      {Bind(lib, {"cuInit"}, &x.init), "cuInit"},
      {Bind(lib, {"cuDriverGetVersion"}, &x.driver_get_version), "cuDriverGetVersion"},
      {Bind(lib, {"cuDeviceGet"}, &x.device_get), "cuDeviceGet"},
      {Bind(lib, {"cuDeviceGetName"}, &x.device_get_name), "cuDeviceGetName"},
      {Bind(lib, {"cuDeviceGetAttribute"}, &x.device_get_attribute), "cuDeviceGetAttribute"},
      {Bind(lib, {"cuDevicePrimaryCtxRetain"}, &x.primary_ctx_retain), "cuDevicePrimaryCtxRetain"},
      {Bind(lib, {"cuCtxSetCurrent"}, &x.ctx_set_current), "cuCtxSetCurrent"},
      {Bind(lib, {"cuCtxSynchronize"}, &x.ctx_synchronize), "cuCtxSynchronize"},
      {Bind(lib, {"cuMemAlloc_v2"}, &x.mem_alloc), "cuMemAlloc_v2"},
      {Bind(lib, {"cuMemFree_v2"}, &x.mem_free), "cuMemFree_v2"},
      {Bind(lib, {"cuMemsetD8_v2"}, &x.memset_d8), "cuMemsetD8_v2"},
      {Bind(lib, {"cuMemcpyHtoD_v2"}, &x.memcpy_htod), "cuMemcpyHtoD_v2"},
      {Bind(lib, {"cuMemcpyDtoH_v2"}, &x.memcpy_dtoh), "cuMemcpyDtoH_v2"},
      {Bind(lib, {"cuMemcpyDtoD_v2"}, &x.memcpy_dtod), "cuMemcpyDtoD_v2"},
      {Bind(lib, {"cuIpcGetMemHandle"}, &x.ipc_get_mem_handle), "cuIpcGetMemHandle"},
      {Bind(lib, {"cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle"}, &x.ipc_open_mem_handle),
       "cuIpcOpenMemHandle_v2"},
      {Bind(lib, {"cuIpcCloseMemHandle"}, &x.ipc_close_mem_handle), "cuIpcCloseMemHandle"},
      {Bind(lib, {"cuModuleLoadData"}, &x.module_load_data), "cuModuleLoadData"},
      {Bind(lib, {"cuModuleGetFunction"}, &x.module_get_function), "cuModuleGetFunction"},
      {Bind(lib, {"cuLaunchKernel"}, &x.launch_kernel), "cuLaunchKernel"},
      {Bind(lib, {"cuStreamCreate"}, &x.stream_create), "cuStreamCreate"},
      {Bind(lib, {"cuStreamQuery"}, &x.stream_query), "cuStreamQuery"},
      {Bind(lib, {"cuEventCreate"}, &x.event_create), "cuEventCreate"},
      {Bind(lib, {"cuEventRecord"}, &x.event_record), "cuEventRecord"},
      {Bind(lib, {"cuEventSynchronize"}, &x.event_synchronize), "cuEventSynchronize"},
      {Bind(lib, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &x.event_elapsed_time),
       "cuEventElapsedTime"},
      {Bind(lib, {"cuGetErrorString"}, &x.get_error_string), "cuGetErrorString"},
  };
  for (const Required& r : required) {
    if (!r.ok) {
      *error = std::string("libcuda.so.1 has no ") + r.name;
      return false;
    }
  }
  Bind(lib, {"cuMemcpyDtoDAsync_v2"}, &x.memcpy_dtod_async);
  Bind(lib, {"cuOccupancyMaxActiveBlocksPerMultiprocessor"}, &x.occupancy_max_active_blocks);
  Bind(lib, {"cuFuncGetAttribute"}, &x.func_get_attribute);
  Bind(lib, {"cuStreamBeginCapture_v2"}, &x.stream_begin_capture);
  Bind(lib, {"cuStreamEndCapture"}, &x.stream_end_capture);
  Bind(lib, {"cuGraphInstantiateWithFlags"}, &x.graph_instantiate);
  Bind(lib, {"cuGraphLaunch"}, &x.graph_launch);
  Bind(lib, {"cuGraphExecDestroy"}, &x.graph_exec_destroy);
  Bind(lib, {"cuGraphDestroy"}, &x.graph_destroy);
  *d = x;
  return true;
}

std::string ErrorText(const Driver& d, CUresult r) {
  const char* text = nullptr;
  if (d.get_error_string != nullptr && d.get_error_string(r, &text) == CUDA_SUCCESS &&
      text != nullptr) {
    return std::string(text) + " (" + std::to_string(static_cast<int>(r)) + ")";
  }
  return "CUresult " + std::to_string(static_cast<int>(r));
}

}  // namespace ncclscope::gpu_check
