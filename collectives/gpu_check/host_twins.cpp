// The host twins of the kernels this program launches (collectives/host_twin_exports.h), exported
// for the emulated CUDA driver so the check runs in CI on the CPU; libncclscope.so exports the same
// (plugin/accel/accel_host_twins.cpp), which this program does not link: it uses collectives/ only.
// The MoE kernels' twins are libncclscope_moe.so's (moe_library.cpp), defined here alike. On a GPU
// nothing calls them.
#include "collectives/host_twin_exports.h"
#include "collectives/moe_host_twins.h"

#define GPU_CHECK_EXPORT extern "C" __attribute__((visibility("default")))

NCCLSCOPE_DEFINE_HOST_TWINS(GPU_CHECK_EXPORT)
NCCLSCOPE_DEFINE_MOE_HOST_TWINS(GPU_CHECK_EXPORT)
