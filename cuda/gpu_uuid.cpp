#include "cuda/gpu_uuid.h"

#include <cstdio>

namespace ncclscope::cuda {

std::string FormatGpuUuid(const CUuuid& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char text[48];
  std::snprintf(text, sizeof text,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return text;
}

std::string GpuUuidOf(const Driver& driver, int ordinal) {
  CUdevice device = 0;
  CUuuid uuid{};
  if (driver.device_get == nullptr || driver.device_get_uuid == nullptr || ordinal < 0 ||
      driver.device_get(&device, ordinal) != CUDA_SUCCESS ||
      driver.device_get_uuid(&uuid, device) != CUDA_SUCCESS) {
    return "";
  }
  return FormatGpuUuid(uuid);
}

}  // namespace ncclscope::cuda
