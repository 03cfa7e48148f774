// libncclscope_moe.so: the MoE dispatch/combine C API (include/ncclscope/moe.h) as one shared
// library a framework links, without the NCCL interposer (libncclscope.so would interpose every
// NCCL call of the process). Its exports are the API and the kernels' host twins for the emulated
// driver, nothing else (moe_exports.map); the API's own code comes from ncclscope_collectives.
#include "collectives/moe/moe_host_twins.h"

NCCLSCOPE_DEFINE_MOE_HOST_TWINS(extern "C" __attribute__((visibility("default"))))
