// Emulated driver entry points for what a caller asks before routing work to its own kernels:
// compute capability, peer access. The emulated device is an sm_90 by default
// (NCCLSIM_COMPUTE_CAPABILITY=major.minor changes it), with every pair of devices peers.
#include <cstdio>
#include <string>

#include "sim/emulator/cuda_exports.h"
#include "sim/emulator/env_config.h"

namespace {

struct ComputeCapability {
  int major;
  int minor;
};

ComputeCapability computeCapability() {
  static const ComputeCapability cc = [] {
    const std::string v = ncclsim::envToken("NCCLSIM_COMPUTE_CAPABILITY", "9.0");
    ComputeCapability parsed{9, 0};
    char tail = 0;
    if (std::sscanf(v.c_str(), "%d.%d%c", &parsed.major, &parsed.minor, &tail) != 2 ||
        parsed.major < 1 || parsed.major > 99 || parsed.minor < 0 || parsed.minor > 9) {
      ncclsim::warnOnce("NCCLSIM_COMPUTE_CAPABILITY",
                        "NCCLSIM_COMPUTE_CAPABILITY=" + v + " is not major.minor; using 9.0");
      parsed = {9, 0};
    }
    return parsed;
  }();
  return cc;
}

}  // namespace

extern "C" {

// Only the attributes a caller of this emulator asks; others are CUDA_ERROR_NOT_SUPPORTED so a
// new question shows up as such instead of as a made-up answer.
CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!ncclsim::validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *pi = computeCapability().major;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *pi = computeCapability().minor;
      return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      *pi = 1;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

// As a real driver, a device is not its own peer (NCCL 2.28.9 src/allocator.cc tests
// `i == cudaDev` before asking); any two distinct devices are.
CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!ncclsim::validDevice(dev) || !ncclsim::validDevice(peerDev))
    return CUDA_ERROR_INVALID_DEVICE;
  *canAccessPeer = dev != peerDev ? 1 : 0;
  return CUDA_SUCCESS;
}

// Every mapping is already reachable: nothing to enable.
CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  if (peerContext == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return Flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
