// The one list of CUDA driver functions ncclscope calls, and which of its parts need each one.
// driver.h and driver.cpp expand it three times (the table's slots, their lookup, each part's
// requirements), so the table, the names looked up and the requirements cannot drift apart.
//
// X(slot, uses, name, fallback, type): `name` is the symbol cuda.h maps the function to (the
// versioned one where it has versions), `fallback` the older symbol a driver that lacks `name` may
// have ("" when none), `uses` the parts that cannot work without it (0: used where present),
// `type` the function's signature. The uses (kUse*) are cuda/driver.h's, where the list is
// expanded.
#pragma once

// NOLINTBEGIN(bugprone-macro-parentheses): the type argument is a declarator, not an expression.

// clang-format off
#define NCCLSCOPE_CUDA_FUNCTIONS(X)                                                                \
  X(init, kUseCompletion | kUseGpuCheck, "cuInit", "", CUresult(unsigned))                         \
  X(driver_get_version, kUseGpuCheck, "cuDriverGetVersion", "", CUresult(int*))                    \
  X(device_get, kUseGpuCheck, "cuDeviceGet", "", CUresult(CUdevice*, int))                         \
  X(device_get_name, kUseGpuCheck, "cuDeviceGetName", "", CUresult(char*, int, CUdevice))          \
  X(device_get_uuid, 0, "cuDeviceGetUuid_v2", "cuDeviceGetUuid", CUresult(CUuuid*, CUdevice))      \
  X(device_get_attribute, kUseNumerics | kUseAccel | kUseGpuCheck, "cuDeviceGetAttribute", "",     \
    CUresult(int*, CUdevice_attribute, CUdevice))                                                  \
  X(primary_ctx_retain, kUseGpuCheck, "cuDevicePrimaryCtxRetain", "",                              \
    CUresult(CUcontext*, CUdevice))                                                                \
  X(ctx_get_current, kUseCompletion | kUseNumerics, "cuCtxGetCurrent", "", CUresult(CUcontext*))  \
  X(ctx_set_current, kUseGpuCheck, "cuCtxSetCurrent", "", CUresult(CUcontext))                     \
  X(ctx_get_device, kUseNumerics | kUseAccel, "cuCtxGetDevice", "", CUresult(CUdevice*))           \
  X(ctx_synchronize, kUseGpuCheck, "cuCtxSynchronize", "", CUresult())                             \
  X(mem_alloc, kUseAccel | kUseGpuCheck, "cuMemAlloc_v2", "", CUresult(CUdeviceptr*, size_t))      \
  X(mem_free, kUseAccel | kUseGpuCheck, "cuMemFree_v2", "", CUresult(CUdeviceptr))                 \
  X(memset_d8, kUseAccel | kUseGpuCheck, "cuMemsetD8_v2", "",                                      \
    CUresult(CUdeviceptr, unsigned char, size_t))                                                  \
  X(memcpy_htod, kUseAccel | kUseGpuCheck, "cuMemcpyHtoD_v2", "",                                  \
    CUresult(CUdeviceptr, const void*, size_t))                                                    \
  X(memcpy_dtoh, kUseAccel | kUseGpuCheck, "cuMemcpyDtoH_v2", "",                                  \
    CUresult(void*, CUdeviceptr, size_t))                                                          \
  X(memcpy_dtod, kUseGpuCheck, "cuMemcpyDtoD_v2", "", CUresult(CUdeviceptr, CUdeviceptr, size_t))  \
  X(memcpy_dtod_async, 0, "cuMemcpyDtoDAsync_v2", "",                                              \
    CUresult(CUdeviceptr, CUdeviceptr, size_t, CUstream))                                          \
  X(mem_host_alloc, kUseNumerics | kUseAccel, "cuMemHostAlloc", "",                                \
    CUresult(void**, size_t, unsigned))                                                            \
  X(mem_host_get_device_pointer, kUseNumerics | kUseAccel, "cuMemHostGetDevicePointer_v2", "",     \
    CUresult(CUdeviceptr*, void*, unsigned))                                                       \
  X(ipc_get_mem_handle, kUseAccel | kUseGpuCheck, "cuIpcGetMemHandle", "",                         \
    CUresult(CUipcMemHandle*, CUdeviceptr))                                                        \
  X(ipc_open_mem_handle, kUseAccel | kUseGpuCheck, "cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle",  \
    CUresult(CUdeviceptr*, CUipcMemHandle, unsigned))                                              \
  X(ipc_close_mem_handle, kUseGpuCheck, "cuIpcCloseMemHandle", "", CUresult(CUdeviceptr))          \
  X(module_load_data, kUseNumerics | kUseAccel | kUseGpuCheck, "cuModuleLoadData", "",             \
    CUresult(CUmodule*, const void*))                                                              \
  X(module_get_function, kUseNumerics | kUseAccel | kUseGpuCheck, "cuModuleGetFunction", "",       \
    CUresult(CUfunction*, CUmodule, const char*))                                                  \
  X(launch_kernel, kUseNumerics | kUseAccel | kUseGpuCheck, "cuLaunchKernel", "",                  \
    CUresult(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,     \
             CUstream, void**, void**))                                                            \
  X(occupancy_max_active_blocks, 0, "cuOccupancyMaxActiveBlocksPerMultiprocessor", "",             \
    CUresult(int*, CUfunction, int, size_t))                                                       \
  X(func_get_attribute, 0, "cuFuncGetAttribute", "",                                               \
    CUresult(int*, CUfunction_attribute, CUfunction))                                              \
  X(stream_create, kUseAccel | kUseGpuCheck, "cuStreamCreate", "", CUresult(CUstream*, unsigned))  \
  X(stream_query, kUseGpuCheck, "cuStreamQuery", "", CUresult(CUstream))                           \
  X(stream_synchronize, kUseAccel, "cuStreamSynchronize", "", CUresult(CUstream))                  \
  X(stream_is_capturing, kUseNumerics | kUseAccel, "cuStreamIsCapturing", "",                      \
    CUresult(CUstream, CUstreamCaptureStatus*))                                                    \
  X(stream_wait_event, kUseAccel, "cuStreamWaitEvent", "", CUresult(CUstream, CUevent, unsigned))  \
  X(event_create, kUseCompletion | kUseNumerics | kUseAccel | kUseGpuCheck, "cuEventCreate", "",   \
    CUresult(CUevent*, unsigned))                                                                  \
  X(event_record, kUseCompletion | kUseNumerics | kUseAccel | kUseGpuCheck, "cuEventRecord", "",   \
    CUresult(CUevent, CUstream))                                                                   \
  X(event_query, kUseCompletion | kUseNumerics, "cuEventQuery", "", CUresult(CUevent))             \
  X(event_synchronize, kUseGpuCheck, "cuEventSynchronize", "", CUresult(CUevent))                  \
  X(event_elapsed_time, kUseGpuCheck, "cuEventElapsedTime_v2", "cuEventElapsedTime",               \
    CUresult(float*, CUevent, CUevent))                                                            \
  X(event_destroy, kUseCompletion | kUseNumerics, "cuEventDestroy_v2", "", CUresult(CUevent))      \
  X(get_error_string, kUseGpuCheck, "cuGetErrorString", "", CUresult(CUresult, const char**))      \
  X(stream_begin_capture, 0, "cuStreamBeginCapture_v2", "",                                        \
    CUresult(CUstream, CUstreamCaptureMode))                                                       \
  X(stream_end_capture, 0, "cuStreamEndCapture", "", CUresult(CUstream, CUgraph*))                 \
  X(graph_instantiate, 0, "cuGraphInstantiateWithFlags", "",                                       \
    CUresult(CUgraphExec*, CUgraph, unsigned long long))                                           \
  X(graph_launch, 0, "cuGraphLaunch", "", CUresult(CUgraphExec, CUstream))                         \
  X(graph_exec_destroy, 0, "cuGraphExecDestroy", "", CUresult(CUgraphExec))                        \
  X(graph_destroy, 0, "cuGraphDestroy", "", CUresult(CUgraph))
// clang-format on

// NOLINTEND(bugprone-macro-parentheses)
