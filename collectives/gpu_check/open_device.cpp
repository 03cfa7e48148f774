#include "collectives/gpu_check/open_device.h"

namespace ncclscope::gpu_check {

std::string DeviceFacts::Describe() const {
  std::string s = name + " (sm_" + std::to_string(major) + std::to_string(minor) + ", ";
  s += sms >= 0 ? std::to_string(sms) + " SMs" : "SM count not reported";
  s += ", driver " + std::to_string(driver_version);
  if (compute_mode >= 0) s += ", compute mode " + std::to_string(compute_mode);
  return s + ")";
}

bool OpenDevice(const Driver& cu, int ordinal, DeviceFacts* f, std::string* error) {
  CUresult r = cu.init(0);
  if (r == CUDA_SUCCESS) r = cu.device_get(&f->device, ordinal);
  CUcontext ctx = nullptr;
  if (r == CUDA_SUCCESS) r = cu.primary_ctx_retain(&ctx, f->device);
  if (r == CUDA_SUCCESS) r = cu.ctx_set_current(ctx);
  if (r != CUDA_SUCCESS) {
    *error = "device " + std::to_string(ordinal) + ": " + ErrorText(cu, r);
    return false;
  }
  char name[256] = {};
  if (cu.device_get_name(name, sizeof(name) - 1, f->device) == CUDA_SUCCESS) f->name = name;
  cu.device_get_attribute(&f->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, f->device);
  cu.device_get_attribute(&f->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, f->device);
  int v = 0;
  if (cu.device_get_attribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, f->device) ==
      CUDA_SUCCESS) {
    f->sms = v;
  }
  if (cu.device_get_attribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, f->device) == CUDA_SUCCESS) {
    f->compute_mode = v;
  }
  cu.driver_get_version(&f->driver_version);
  f->gpu = collectives::GpuClassOf(f->major);
  return true;
}

}  // namespace ncclscope::gpu_check
