// The host twins of ncclscope's collective kernels (collectives/twins/host_twin_exports.h),
// exported by libncclscope.so for the emulated CUDA driver, which runs a routed call's kernel by
// calling them. The numerics kernels' are numerics/numerics_host_twins.cpp's. On a real GPU
// nothing calls them.
#include "collectives/twins/host_twin_exports.h"
#include "plugin/core/export.h"

NCCLSCOPE_DEFINE_COLLECTIVE_HOST_TWINS(NCCLSCOPE_API)
