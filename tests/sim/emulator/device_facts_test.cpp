// What the emulated libcuda.so.1 answers a caller deciding whether to run its own kernels, and the
// entry points cuGetProcAddress finds for the memory, IPC, module and launch functions.
#include <gtest/gtest.h>

#include <cstdlib>

#include <cuda.h>

#include "tests/sim/emulator/child_check.h"
#include "tests/sim/emulator/rank_harness.h"

namespace {

// The answers are read once per process: each case runs in a fresh child.
int attribute(CUdevice_attribute a) {
  int v = -1;
  return cuDeviceGetAttribute(&v, a, 0) == CUDA_SUCCESS ? v : -1;
}

TEST(DeviceFacts, ComputeCapabilityIs90UnlessTheEnvironmentSaysOtherwise) {
  ncclsim_test::runInOneRank([] {
    CHILD_CHECK(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) == 9);
    CHILD_CHECK(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) == 0);
    int v = 0;
    CHILD_CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 64) ==
                CUDA_ERROR_INVALID_DEVICE);
    return 0;
  });
  ncclsim_test::runInOneRank([] {
    setenv("NCCLSIM_COMPUTE_CAPABILITY", "8.6", 1);
    CHILD_CHECK(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) == 8);
    CHILD_CHECK(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) == 6);
    return 0;
  });
  ncclsim_test::runInOneRank([] {
    setenv("NCCLSIM_COMPUTE_CAPABILITY", "sm80", 1);  // not major.minor: the default stays
    CHILD_CHECK(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) == 9);
    return 0;
  });
}

TEST(DeviceFacts, DistinctDevicesArePeersAndNoStreamCaptures) {
  ncclsim_test::runInOneRank([] {
    int can = -1;
    CHILD_CHECK(cuDeviceCanAccessPeer(&can, 0, 1) == CUDA_SUCCESS && can == 1);
    CHILD_CHECK(cuDeviceCanAccessPeer(&can, 1, 1) == CUDA_SUCCESS && can == 0);
    CUcontext peer = nullptr;
    CHILD_CHECK(cuDevicePrimaryCtxRetain(&peer, 1) == CUDA_SUCCESS);
    CHILD_CHECK(cuCtxEnablePeerAccess(peer, 0) == CUDA_SUCCESS);
    CUstream s = nullptr;
    CHILD_CHECK(cuStreamCreate(&s, 0) == CUDA_SUCCESS);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    CHILD_CHECK(cuStreamIsCapturing(s, &status) == CUDA_SUCCESS);
    CHILD_CHECK(status == CU_STREAM_CAPTURE_STATUS_NONE);
    return 0;
  });
}

TEST(DeviceFacts, ProcAddressFindsTheVersionsCudaHeaderMapsTo) {
  ncclsim_test::runInOneRank([] {
    struct Expect {
      const char* name;
      void* fn;
    };
    const Expect expected[] = {
        {"cuMemAlloc", reinterpret_cast<void*>(&cuMemAlloc_v2)},
        {"cuMemFree", reinterpret_cast<void*>(&cuMemFree_v2)},
        {"cuMemsetD8", reinterpret_cast<void*>(&cuMemsetD8_v2)},
        {"cuMemHostAlloc", reinterpret_cast<void*>(&cuMemHostAlloc)},
        {"cuMemHostGetDevicePointer", reinterpret_cast<void*>(&cuMemHostGetDevicePointer_v2)},
        {"cuMemcpyHtoD", reinterpret_cast<void*>(&cuMemcpyHtoD_v2)},
        {"cuMemcpyDtoH", reinterpret_cast<void*>(&cuMemcpyDtoH_v2)},
        {"cuMemGetAddressRange", reinterpret_cast<void*>(&cuMemGetAddressRange_v2)},
        {"cuIpcGetMemHandle", reinterpret_cast<void*>(&cuIpcGetMemHandle)},
        {"cuIpcOpenMemHandle", reinterpret_cast<void*>(&cuIpcOpenMemHandle_v2)},
        {"cuIpcCloseMemHandle", reinterpret_cast<void*>(&cuIpcCloseMemHandle)},
        {"cuModuleLoadData", reinterpret_cast<void*>(&cuModuleLoadData)},
        {"cuModuleGetFunction", reinterpret_cast<void*>(&cuModuleGetFunction)},
        {"cuLaunchKernel", reinterpret_cast<void*>(&cuLaunchKernel)},
        {"cuDeviceGetAttribute", reinterpret_cast<void*>(&cuDeviceGetAttribute)},
        {"cuStreamIsCapturing", reinterpret_cast<void*>(&cuStreamIsCapturing)},
    };
    for (const Expect& e : expected) {
      void* fn = nullptr;
      CUdriverProcAddressQueryResult status{};
      if (cuGetProcAddress(e.name, &fn, 13000, 0, &status) != CUDA_SUCCESS || fn != e.fn) {
        ncclsim_test::rankReport("cuGetProcAddress(%s) gave %p, not %p", e.name, fn, e.fn);
        return 1;
      }
    }
    return 0;
  });
}

}  // namespace
