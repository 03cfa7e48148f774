#include "collectives/device_code.h"

#ifdef NCCLSCOPE_ALLREDUCE_FATBIN
// The fatbin's bytes, as nvcc wrote them, in the library's read-only data (16-byte aligned as
// cuModuleLoadData wants a fatbin).
asm(".section .rodata\n"
    ".balign 16\n"
    ".global ncclscope_allreduce_fatbin_begin\n"
    ".hidden ncclscope_allreduce_fatbin_begin\n"
    ".global ncclscope_allreduce_fatbin_end\n"
    ".hidden ncclscope_allreduce_fatbin_end\n"
    "ncclscope_allreduce_fatbin_begin:\n"
    ".incbin \"" NCCLSCOPE_ALLREDUCE_FATBIN
    "\"\n"
    "ncclscope_allreduce_fatbin_end:\n"
    ".previous\n");
extern "C" const unsigned char ncclscope_allreduce_fatbin_begin[];
extern "C" const unsigned char ncclscope_allreduce_fatbin_end[];
#endif

#ifdef NCCLSCOPE_ALLTOALL_FATBIN
asm(".section .rodata\n"
    ".balign 16\n"
    ".global ncclscope_alltoall_fatbin_begin\n"
    ".hidden ncclscope_alltoall_fatbin_begin\n"
    ".global ncclscope_alltoall_fatbin_end\n"
    ".hidden ncclscope_alltoall_fatbin_end\n"
    "ncclscope_alltoall_fatbin_begin:\n"
    ".incbin \"" NCCLSCOPE_ALLTOALL_FATBIN
    "\"\n"
    "ncclscope_alltoall_fatbin_end:\n"
    ".previous\n");
extern "C" const unsigned char ncclscope_alltoall_fatbin_begin[];
extern "C" const unsigned char ncclscope_alltoall_fatbin_end[];
#endif

#ifdef NCCLSCOPE_EXCHANGE_FATBIN
asm(".section .rodata\n"
    ".balign 16\n"
    ".global ncclscope_exchange_fatbin_begin\n"
    ".hidden ncclscope_exchange_fatbin_begin\n"
    ".global ncclscope_exchange_fatbin_end\n"
    ".hidden ncclscope_exchange_fatbin_end\n"
    "ncclscope_exchange_fatbin_begin:\n"
    ".incbin \"" NCCLSCOPE_EXCHANGE_FATBIN
    "\"\n"
    "ncclscope_exchange_fatbin_end:\n"
    ".previous\n");
extern "C" const unsigned char ncclscope_exchange_fatbin_begin[];
extern "C" const unsigned char ncclscope_exchange_fatbin_end[];
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
