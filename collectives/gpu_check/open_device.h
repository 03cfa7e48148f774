// Makes a device's primary context current on this thread and describes the device.
#pragma once

#include <string>

#include "collectives/gpu_check/driver.h"
#include "collectives/planner/tuning_table.h"

namespace ncclscope::gpu_check {

struct DeviceFacts {
  CUdevice device = 0;
  std::string name;
  int major = 0, minor = 0;
  int sms = -1;           // -1: the driver does not say (the emulator)
  int compute_mode = -1;  // CU_COMPUTEMODE_*; -1: not said
  int driver_version = 0;
  collectives::GpuClass gpu = collectives::GpuClass::kUnknown;
  std::string Describe() const;  // "NVIDIA H200 (sm_90, 132 SMs, driver 13000, compute mode 0)"
};

// cuInit, the device's primary context made current. False with *error.
bool OpenDevice(const Driver& cu, int ordinal, DeviceFacts* f, std::string* error);

}  // namespace ncclscope::gpu_check
