// ncclscope_moe_fatbin (include/ncclscope/moe.h): the MoE kernels' device code (kernels/moe.cu),
// built by nvcc into a fatbin of its own with the same flags as the other kernels and embedded in
// the library's read-only data, 16-byte aligned as cuModuleLoadData wants it.
#include <cstddef>

#include "collectives/device_code/embedded_fatbin.h"
#include "collectives/include/ncclscope/moe.h"

#ifdef NCCLSCOPE_MOE_FATBIN
NCCLSCOPE_EMBED_FATBIN(moe, NCCLSCOPE_MOE_FATBIN)
#endif

extern "C" const void* ncclscope_moe_fatbin(size_t* bytes) {
#ifdef NCCLSCOPE_MOE_FATBIN
  if (bytes != nullptr) {
    *bytes = static_cast<size_t>(ncclscope_moe_fatbin_end - ncclscope_moe_fatbin_begin);
  }
  return ncclscope_moe_fatbin_begin;
#else
  if (bytes != nullptr) *bytes = 0;
  return nullptr;
#endif
}
