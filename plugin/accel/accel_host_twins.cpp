// The host twins of ncclscope's kernels (collectives/host_twin_exports.h), exported by
// libncclscope.so for the emulated CUDA driver, which runs a routed call's kernel by calling them.
// On a real GPU nothing calls them.
#include "collectives/host_twin_exports.h"
#include "plugin/core/export.h"

NCCLSCOPE_DEFINE_HOST_TWINS(NCCLSCOPE_API)
