// The numerics kernels' host twins (collectives/numerics/numerics_host_twins.h), exported by
// libncclscope.so for the emulated CUDA driver, which runs a sampled call's scan and hash by
// calling them. Apart from the collectives' twins (accel/accel_host_twins.cpp): numerics stays in
// the probe, acceleration is to become a library of its own. On a real GPU nothing calls them.
#include "collectives/numerics/numerics_host_twins.h"
#include "plugin/core/export.h"

NCCLSCOPE_DEFINE_NUMERICS_HOST_TWINS(NCCLSCOPE_API)
