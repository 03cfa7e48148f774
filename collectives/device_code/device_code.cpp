#include "collectives/device_code/device_code.h"

#include "collectives/device_code/embedded_fatbin.h"

#ifdef NCCLSCOPE_ALLREDUCE_FATBIN
NCCLSCOPE_EMBED_FATBIN(allreduce, NCCLSCOPE_ALLREDUCE_FATBIN)
#endif

#ifdef NCCLSCOPE_ALLTOALL_FATBIN
NCCLSCOPE_EMBED_FATBIN(alltoall, NCCLSCOPE_ALLTOALL_FATBIN)
#endif

#ifdef NCCLSCOPE_EXCHANGE_FATBIN
NCCLSCOPE_EMBED_FATBIN(exchange, NCCLSCOPE_EXCHANGE_FATBIN)
#endif

namespace ncclscope::collectives {

DeviceImage AllReduceFatbin() noexcept {
#ifdef NCCLSCOPE_ALLREDUCE_FATBIN
  return {ncclscope_allreduce_fatbin_begin,
          static_cast<size_t>(ncclscope_allreduce_fatbin_end - ncclscope_allreduce_fatbin_begin)};
#else
  return {};
#endif
}

DeviceImage AlltoAllFatbin() noexcept {
#ifdef NCCLSCOPE_ALLTOALL_FATBIN
  return {ncclscope_alltoall_fatbin_begin,
          static_cast<size_t>(ncclscope_alltoall_fatbin_end - ncclscope_alltoall_fatbin_begin)};
#else
  return {};
#endif
}

DeviceImage ExchangeFatbin() noexcept {
#ifdef NCCLSCOPE_EXCHANGE_FATBIN
  return {ncclscope_exchange_fatbin_begin,
          static_cast<size_t>(ncclscope_exchange_fatbin_end - ncclscope_exchange_fatbin_begin)};
#else
  return {};
#endif
}

}  // namespace ncclscope::collectives
