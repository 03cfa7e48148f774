// The CUDA driver functions the GPU check calls, found at run time with dlopen("libcuda.so.1"), so
// one binary built on a machine without a GPU runs on one with a driver (and, in CI, on the
// emulator's libcuda.so.1, docs/emulator.md). Nothing links against CUDA.
#pragma once

#include <cuda.h>

#include <string>

namespace ncclscope::gpu_check {

struct Driver {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driver_get_version)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_name)(char*, int, CUdevice) = nullptr;
  CUresult (*device_get_attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*memcpy_dtod)(CUdeviceptr, CUdeviceptr, size_t) = nullptr;
  CUresult (*ipc_get_mem_handle)(CUipcMemHandle*, CUdeviceptr) = nullptr;
  CUresult (*ipc_open_mem_handle)(CUdeviceptr*, CUipcMemHandle, unsigned) = nullptr;
  CUresult (*ipc_close_mem_handle)(CUdeviceptr) = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*stream_create)(CUstream*, unsigned) = nullptr;
  CUresult (*stream_query)(CUstream) = nullptr;
  CUresult (*event_create)(CUevent*, unsigned) = nullptr;
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*event_synchronize)(CUevent) = nullptr;
  CUresult (*event_elapsed_time)(float*, CUevent, CUevent) = nullptr;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
  // Optional: a real driver has them, the emulator does not (null then).
  CUresult (*memcpy_dtod_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*occupancy_max_active_blocks)(int*, CUfunction, int, size_t) = nullptr;
  CUresult (*func_get_attribute)(int*, CUfunction_attribute, CUfunction) = nullptr;
  // Stream capture and graphs (the MoE graph-replay check; the emulator has none).
  CUresult (*stream_begin_capture)(CUstream, CUstreamCaptureMode) = nullptr;
  CUresult (*stream_end_capture)(CUstream, CUgraph*) = nullptr;
  CUresult (*graph_instantiate)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  CUresult (*graph_launch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*graph_exec_destroy)(CUgraphExec) = nullptr;
  CUresult (*graph_destroy)(CUgraph) = nullptr;
  bool HasGraphs() const {
    return stream_begin_capture != nullptr && stream_end_capture != nullptr &&
           graph_instantiate != nullptr && graph_launch != nullptr &&
           graph_exec_destroy != nullptr && graph_destroy != nullptr;
  }
};

// Loads libcuda.so.1 (never closed) and fills *d. False with *error naming what is missing.
bool LoadDriver(Driver* d, std::string* error);

// "CUDA_ERROR_OUT_OF_MEMORY: out of memory" or the number when the driver has no text for it.
std::string ErrorText(const Driver& d, CUresult r);

}  // namespace ncclscope::gpu_check
