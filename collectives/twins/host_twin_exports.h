// The host twins of ncclscope's collective kernels (AllReduce, all-to-all, exchange) as the
// emulated CUDA driver finds them: it runs kernel NAME of a loaded module by calling NAME_host with
// the launch's parameters and shape, the one by-value parameter being NAME_host_param_bytes long
// (docs/emulator.md, host twins). The numerics kernels' are numerics/numerics_host_twins.h's, so
// that a program defines only the twins of the kernels it launches. One definition for every
// program that launches the kernels on the emulator: libncclscope.so
// (plugin/accel/accel_host_twins.cpp) and ncclscope-gpu-check
// (collectives/gpu_check/host_twins.cpp), each exporting them with its own attribute. On a real GPU
// nothing calls them.
#pragma once

#include <cstdint>

#include "collectives/planner/allreduce_kernel_args.h"
#include "collectives/planner/alltoall_kernel_args.h"
#include "collectives/planner/exchange_kernel_args.h"
#include "collectives/twins/allreduce_twin_kernel.h"
#include "collectives/twins/alltoall_twin_kernel.h"
#include "collectives/twins/exchange_twin.h"
#include "collectives/twins/twin_steps.h"

namespace ncclscope::collectives {

inline void RunAllReduceHostTwin(Algorithm algorithm, Dtype dtype, void** params, unsigned grid_x,
                                 unsigned block_x) {
  if (params == nullptr || params[0] == nullptr) return;
  RunAllReduceTwinKernel(algorithm, dtype, *static_cast<const AllReduceKernelArgs*>(params[0]),
                         grid_x, block_x);
}

inline void RunAlltoAllHostTwin(void** params, unsigned grid_x, unsigned block_x) {
  if (params == nullptr || params[0] == nullptr) return;
  RunAlltoAllTwinKernel(*static_cast<const AlltoAllKernelArgs*>(params[0]), grid_x, block_x);
}

// The exchange's twin runs every unit of the launch on this thread in turn (exchange_twin.h), so
// the grid shape is the parameter's own.
inline void RunExchangeHostTwin(void** params) {
  if (params == nullptr || params[0] == nullptr) return;
  const auto& args = *static_cast<const ExchangeKernelArgs*>(params[0]);
  Stall stall;
  const int64_t deadline = MonotonicNs() + static_cast<int64_t>(args.timeout_ns);
  if (RunExchangeTwin(args, deadline, &stall) || args.stall == nullptr) return;
  RecordKernelStall(args.stall, stall);
}

}  // namespace ncclscope::collectives

// EXPORT is a declaration's specifiers (extern "C" and an attribute): it cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define NCCLSCOPE_ALLREDUCE_HOST_TWIN(EXPORT, name, algorithm, dtype)                              \
  EXPORT void name##_host(void** params, unsigned grid_x, unsigned block_x) {                      \
    ::ncclscope::collectives::RunAllReduceHostTwin(::ncclscope::collectives::Algorithm::algorithm, \
                                                   ::ncclscope::collectives::Dtype::dtype, params, \
                                                   grid_x, block_x);                               \
  }                                                                                                \
  EXPORT const unsigned long name##_host_param_bytes =                                             \
      sizeof(::ncclscope::collectives::AllReduceKernelArgs);

// Defines the collective kernels' NAME_host and NAME_host_param_bytes with EXPORT (extern "C" and
// default visibility, as the program exports its symbols).
#define NCCLSCOPE_DEFINE_COLLECTIVE_HOST_TWINS(EXPORT)                                         \
  NCCLSCOPE_ALLREDUCE_HOST_TWIN(EXPORT, ncclscope_allreduce_one_shot_fp16, kOneShot, kFp16)    \
  NCCLSCOPE_ALLREDUCE_HOST_TWIN(EXPORT, ncclscope_allreduce_one_shot_fp32, kOneShot, kFp32)    \
  NCCLSCOPE_ALLREDUCE_HOST_TWIN(EXPORT, ncclscope_allreduce_one_shot_bf16, kOneShot, kBf16)    \
  NCCLSCOPE_ALLREDUCE_HOST_TWIN(EXPORT, ncclscope_allreduce_two_shot_fp16, kTwoShot, kFp16)    \
  NCCLSCOPE_ALLREDUCE_HOST_TWIN(EXPORT, ncclscope_allreduce_two_shot_fp32, kTwoShot, kFp32)    \
  NCCLSCOPE_ALLREDUCE_HOST_TWIN(EXPORT, ncclscope_allreduce_two_shot_bf16, kTwoShot, kBf16)    \
  EXPORT void ncclscope_alltoall_pull_host(void** params, unsigned grid_x, unsigned block_x) { \
    ::ncclscope::collectives::RunAlltoAllHostTwin(params, grid_x, block_x);                    \
  }                                                                                            \
  EXPORT const unsigned long ncclscope_alltoall_pull_host_param_bytes =                        \
      sizeof(::ncclscope::collectives::AlltoAllKernelArgs);                                    \
  EXPORT void ncclscope_exchange_host(void** params, unsigned, unsigned) {                     \
    ::ncclscope::collectives::RunExchangeHostTwin(params);                                     \
  }                                                                                            \
  EXPORT const unsigned long ncclscope_exchange_host_param_bytes =                             \
      sizeof(::ncclscope::collectives::ExchangeKernelArgs);
// NOLINTEND(bugprone-macro-parentheses)
