#include "collectives/numerics/numerics_fatbin.h"

#include "collectives/device_code/embedded_fatbin.h"

#ifdef NCCLSCOPE_NUMERICS_FATBIN
NCCLSCOPE_EMBED_FATBIN(numerics, NCCLSCOPE_NUMERICS_FATBIN)
#endif

namespace ncclscope::collectives {

DeviceImage NumericsFatbin() noexcept {
#ifdef NCCLSCOPE_NUMERICS_FATBIN
  return {ncclscope_numerics_fatbin_begin,
          static_cast<size_t>(ncclscope_numerics_fatbin_end - ncclscope_numerics_fatbin_begin)};
#else
  return {};
#endif
}

}  // namespace ncclscope::collectives
