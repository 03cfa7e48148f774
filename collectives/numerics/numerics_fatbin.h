// The numerics passes' device code (kernels/numerics.cu: NaN/Inf scan, content hash), embedded in
// the library at build time with the same flags as the collectives' kernels, apart from them so
// that a library which samples numerics carries none of the collectives' device code. The probe
// loads it when numerics sampling is on (plugin/numerics/numerics_probe.cpp).
#pragma once

#include "collectives/device_code/device_image.h"

namespace ncclscope::collectives {

// The image, or {nullptr, 0} when built without nvcc. Pure, thread-safe; the bytes live as long as
// the library.
DeviceImage NumericsFatbin() noexcept;

}  // namespace ncclscope::collectives
