// The host twins of ncclscope's kernels (collectives/twins/host_twin_exports.h and
// collectives/numerics/numerics_host_twins.h), exported by
// libncclscope.so for the emulated CUDA driver, which runs a routed call's kernel by calling them.
// On a real GPU nothing calls them.
#include "collectives/numerics/numerics_host_twins.h"
#include "collectives/twins/host_twin_exports.h"
#include "plugin/core/export.h"

NCCLSCOPE_DEFINE_COLLECTIVE_HOST_TWINS(NCCLSCOPE_API)
NCCLSCOPE_DEFINE_NUMERICS_HOST_TWINS(NCCLSCOPE_API)
