// The numerics kernels' host twins as the emulated CUDA driver finds them: it runs kernel NAME of a
// loaded module by calling NAME_host with the launch's parameters and shape, the one by-value
// parameter being NAME_host_param_bytes long (docs/emulator.md, host twins). Apart from the
// collectives' (twins/host_twin_exports.h) so that a program which samples numerics defines these
// without linking the collectives' twins. One definition for every program that launches the
// numerics kernels on the emulator: libncclscope.so (plugin/numerics/numerics_host_twins.cpp) and
// ncclscope-gpu-check (collectives/gpu_check/host_twins.cpp), each exporting them with its own
// attribute. On a real GPU nothing calls them.
#pragma once

#include "collectives/numerics/numerics_kernel_args.h"
#include "collectives/numerics/numerics_twin.h"

namespace ncclscope::collectives {

inline void RunNumericScanHostTwin(NumericFormat format, void** params, unsigned grid_x,
                                   unsigned block_x) {
  if (params == nullptr || params[0] == nullptr) return;
  RunNumericScanTwinKernel(format, *static_cast<const NumericScanArgs*>(params[0]), grid_x,
                           block_x);
}

inline void RunContentHashHostTwin(void** params, unsigned grid_x, unsigned block_x) {
  if (params == nullptr || params[0] == nullptr) return;
  RunContentHashTwinKernel(*static_cast<const ContentHashArgs*>(params[0]), grid_x, block_x);
}

}  // namespace ncclscope::collectives

// EXPORT is a declaration's specifiers (extern "C" and an attribute): it cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define NCCLSCOPE_NUMERIC_SCAN_HOST_TWIN(EXPORT, name, format)                     \
  EXPORT void name##_host(void** params, unsigned grid_x, unsigned block_x) {      \
    ::ncclscope::collectives::RunNumericScanHostTwin(                              \
        ::ncclscope::collectives::NumericFormat::format, params, grid_x, block_x); \
  }                                                                                \
  EXPORT const unsigned long name##_host_param_bytes =                             \
      sizeof(::ncclscope::collectives::NumericScanArgs);

// Defines the numerics kernels' NAME_host and NAME_host_param_bytes with EXPORT (extern "C" and
// default visibility, as the program exports its symbols).
#define NCCLSCOPE_DEFINE_NUMERICS_HOST_TWINS(EXPORT)                                           \
  NCCLSCOPE_NUMERIC_SCAN_HOST_TWIN(EXPORT, ncclscope_numerics_scan_fp16, kFp16)                \
  NCCLSCOPE_NUMERIC_SCAN_HOST_TWIN(EXPORT, ncclscope_numerics_scan_fp32, kFp32)                \
  NCCLSCOPE_NUMERIC_SCAN_HOST_TWIN(EXPORT, ncclscope_numerics_scan_fp64, kFp64)                \
  NCCLSCOPE_NUMERIC_SCAN_HOST_TWIN(EXPORT, ncclscope_numerics_scan_bf16, kBf16)                \
  NCCLSCOPE_NUMERIC_SCAN_HOST_TWIN(EXPORT, ncclscope_numerics_scan_fp8e4m3, kFp8E4m3)          \
  NCCLSCOPE_NUMERIC_SCAN_HOST_TWIN(EXPORT, ncclscope_numerics_scan_fp8e5m2, kFp8E5m2)          \
  EXPORT void ncclscope_numerics_hash_host(void** params, unsigned grid_x, unsigned block_x) { \
    ::ncclscope::collectives::RunContentHashHostTwin(params, grid_x, block_x);                 \
  }                                                                                            \
  EXPORT const unsigned long ncclscope_numerics_hash_host_param_bytes =                        \
      sizeof(::ncclscope::collectives::ContentHashArgs);
// NOLINTEND(bugprone-macro-parentheses)
