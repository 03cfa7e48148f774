// The MoE kernels' host twins as the emulated CUDA driver finds them: it runs kernel NAME of a
// loaded module by calling NAME_host with the launch's parameters (docs/emulator.md, host twins;
// twins/host_twin_exports.h and numerics/numerics_host_twins.h for the other kernels). Each program
// that launches the MoE kernels on the emulator defines them once with its own export attribute:
// libncclscope_moe.so (moe_library.cpp) for every framework that links it. On a real GPU nothing
// calls them.
#pragma once

#include "collectives/include/ncclscope/moe.h"

// EXPORT is a declaration's specifiers (extern "C" and an attribute): it cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define NCCLSCOPE_MOE_HOST_TWIN(EXPORT, kernel, args_type, run)  \
  EXPORT void kernel##_host(void** params, unsigned, unsigned) { \
    if (params != nullptr && params[0] != nullptr) {             \
      run(static_cast<const args_type*>(params[0]));             \
    }                                                            \
  }                                                              \
  EXPORT const unsigned long kernel##_host_param_bytes = sizeof(args_type);

// The twins run the whole grid on the launching thread (the CPU calls' own block loop).
#define NCCLSCOPE_DEFINE_MOE_HOST_TWINS(EXPORT)                                        \
  NCCLSCOPE_MOE_HOST_TWIN(EXPORT, ncclscope_moe_dispatch, ncclscope_moe_dispatch_args, \
                          ncclscope_moe_dispatch_on_cpu)                               \
  NCCLSCOPE_MOE_HOST_TWIN(EXPORT, ncclscope_moe_combine, ncclscope_moe_combine_args,   \
                          ncclscope_moe_combine_on_cpu)
// NOLINTEND(bugprone-macro-parentheses)
