// The host twins of the kernels this program launches (collectives/twins/host_twin_exports.h and
// collectives/numerics/numerics_host_twins.h), exported for the emulated CUDA driver so the check
// runs in CI on the CPU; libncclscope.so exports the same (plugin/accel/, plugin/numerics/),
// which this program does not link: it uses collectives/ only. The MoE kernels' twins are
// libncclscope_moe.so's (moe/moe_library.cpp), defined here alike. On a GPU nothing calls them.
#include "collectives/moe/moe_host_twins.h"
#include "collectives/numerics/numerics_host_twins.h"
#include "collectives/twins/host_twin_exports.h"

#define GPU_CHECK_EXPORT extern "C" __attribute__((visibility("default")))

NCCLSCOPE_DEFINE_COLLECTIVE_HOST_TWINS(GPU_CHECK_EXPORT)
NCCLSCOPE_DEFINE_NUMERICS_HOST_TWINS(GPU_CHECK_EXPORT)
NCCLSCOPE_DEFINE_MOE_HOST_TWINS(GPU_CHECK_EXPORT)
