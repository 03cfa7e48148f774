// The device code of ncclscope's own collective kernels (AllReduce, all-to-all, exchange),
// embedded in the library at build time, one fatbin per kernel source (device_image.h).
#pragma once

#include "collectives/device_code/device_image.h"

namespace ncclscope::collectives {

DeviceImage AllReduceFatbin() noexcept;
// The all-to-all kernel (kernels/alltoall.cu), a fatbin of its own built with the same flags.
DeviceImage AlltoAllFatbin() noexcept;
// The grouped send/recv exchange kernel (kernels/exchange.cu), likewise.
DeviceImage ExchangeFatbin() noexcept;

}  // namespace ncclscope::collectives
