// The host twins of the kernels this program launches, exported for the emulated CUDA driver: it
// runs kernel NAME of a loaded module by calling NAME_host with the launch's parameter and shape
// (docs/emulator.md, host twins), so the check runs in CI on the CPU. On a GPU nothing calls them.
// The same exports as libncclscope.so's (plugin/accel_host_twins.cpp), which this program does not
// link: it uses collectives/ only.
#include "collectives/allreduce_kernel_args.h"
#include "collectives/allreduce_twin_kernel.h"
#include "collectives/alltoall_kernel_args.h"
#include "collectives/alltoall_twin_kernel.h"
#include "collectives/exchange_kernel_args.h"
#include "collectives/exchange_twin.h"
#include "collectives/twin_steps.h"

namespace {

namespace nc = ncclscope::collectives;

void RunTwin(nc::Algorithm algorithm, nc::Dtype dtype, void** params, unsigned grid_x,
             unsigned block_x) {
  if (params == nullptr || params[0] == nullptr) return;
  nc::RunAllReduceTwinKernel(
      algorithm, dtype, *static_cast<const nc::AllReduceKernelArgs*>(params[0]), grid_x, block_x);
}

}  // namespace

#define GPU_CHECK_EXPORT extern "C" __attribute__((visibility("default")))
#define GPU_CHECK_HOST_TWIN(name, algorithm, dtype)                                     \
  GPU_CHECK_EXPORT void name##_host(void** params, unsigned grid_x, unsigned block_x) { \
    RunTwin(nc::Algorithm::algorithm, nc::Dtype::dtype, params, grid_x, block_x);       \
  }                                                                                     \
  GPU_CHECK_EXPORT const unsigned long name##_host_param_bytes = sizeof(nc::AllReduceKernelArgs);

GPU_CHECK_HOST_TWIN(ncclscope_allreduce_one_shot_fp16, kOneShot, kFp16)
GPU_CHECK_HOST_TWIN(ncclscope_allreduce_one_shot_fp32, kOneShot, kFp32)
GPU_CHECK_HOST_TWIN(ncclscope_allreduce_one_shot_bf16, kOneShot, kBf16)
GPU_CHECK_HOST_TWIN(ncclscope_allreduce_two_shot_fp16, kTwoShot, kFp16)
GPU_CHECK_HOST_TWIN(ncclscope_allreduce_two_shot_fp32, kTwoShot, kFp32)
GPU_CHECK_HOST_TWIN(ncclscope_allreduce_two_shot_bf16, kTwoShot, kBf16)

GPU_CHECK_EXPORT void ncclscope_alltoall_pull_host(void** params, unsigned grid_x,
                                                   unsigned block_x) {
  if (params == nullptr || params[0] == nullptr) return;
  nc::RunAlltoAllTwinKernel(*static_cast<const nc::AlltoAllKernelArgs*>(params[0]), grid_x,
                            block_x);
}
GPU_CHECK_EXPORT const unsigned long ncclscope_alltoall_pull_host_param_bytes =
    sizeof(nc::AlltoAllKernelArgs);

// The exchange kernel of grouped sends and receives: the twin runs every unit of the launch on this
// thread in turn (exchange_twin.h), so the grid shape is the parameter's own.
GPU_CHECK_EXPORT void ncclscope_exchange_host(void** params, unsigned /*grid_x*/,
                                              unsigned /*block_x*/) {
  if (params == nullptr || params[0] == nullptr) return;
  const auto& args = *static_cast<const nc::ExchangeKernelArgs*>(params[0]);
  nc::Stall stall;
  const int64_t deadline = nc::MonotonicNs() + static_cast<int64_t>(args.timeout_ns);
  if (nc::RunExchangeTwin(args, deadline, &stall) || args.stall == nullptr) return;
  nc::RecordKernelStall(args.stall, stall);
}
GPU_CHECK_EXPORT const unsigned long ncclscope_exchange_host_param_bytes =
    sizeof(nc::ExchangeKernelArgs);
