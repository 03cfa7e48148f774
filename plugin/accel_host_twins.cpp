// The host twins of ncclscope's AllReduce and all-to-all kernels, exported for the emulated CUDA
// driver: it runs a kernel NAME of a loaded module by calling NAME_host with the launch's
// parameters and shape, the one by-value parameter being NAME_host_param_bytes long
// (docs/emulator.md, host twins). On a real GPU nothing calls them.
#include "collectives/allreduce_kernel_args.h"
#include "collectives/allreduce_twin_kernel.h"
#include "collectives/alltoall_kernel_args.h"
#include "collectives/alltoall_twin_kernel.h"
#include "collectives/exchange_kernel_args.h"
#include "collectives/exchange_twin.h"
#include "collectives/twin_steps.h"
#include "plugin/export.h"

namespace {

namespace nc = ncclscope::collectives;

void RunTwin(nc::Algorithm algorithm, nc::Dtype dtype, void** params, unsigned grid_x,
             unsigned block_x) {
  if (params == nullptr || params[0] == nullptr) return;
  nc::RunAllReduceTwinKernel(
      algorithm, dtype, *static_cast<const nc::AllReduceKernelArgs*>(params[0]), grid_x, block_x);
}

}  // namespace

#define NCCLSCOPE_HOST_TWIN(name, algorithm, dtype)                                  \
  NCCLSCOPE_API void name##_host(void** params, unsigned grid_x, unsigned block_x) { \
    RunTwin(nc::Algorithm::algorithm, nc::Dtype::dtype, params, grid_x, block_x);    \
  }                                                                                  \
  NCCLSCOPE_API const unsigned long name##_host_param_bytes = sizeof(nc::AllReduceKernelArgs);

NCCLSCOPE_HOST_TWIN(ncclscope_allreduce_one_shot_fp16, kOneShot, kFp16)
NCCLSCOPE_HOST_TWIN(ncclscope_allreduce_one_shot_fp32, kOneShot, kFp32)
NCCLSCOPE_HOST_TWIN(ncclscope_allreduce_one_shot_bf16, kOneShot, kBf16)
NCCLSCOPE_HOST_TWIN(ncclscope_allreduce_two_shot_fp16, kTwoShot, kFp16)
NCCLSCOPE_HOST_TWIN(ncclscope_allreduce_two_shot_fp32, kTwoShot, kFp32)
NCCLSCOPE_HOST_TWIN(ncclscope_allreduce_two_shot_bf16, kTwoShot, kBf16)

// The all-to-all kernel: one entry point for every data type (it moves bytes).
NCCLSCOPE_API void ncclscope_alltoall_pull_host(void** params, unsigned grid_x, unsigned block_x) {
  if (params == nullptr || params[0] == nullptr) return;
  nc::RunAlltoAllTwinKernel(*static_cast<const nc::AlltoAllKernelArgs*>(params[0]), grid_x,
                            block_x);
}
NCCLSCOPE_API const unsigned long ncclscope_alltoall_pull_host_param_bytes =
    sizeof(nc::AlltoAllKernelArgs);

// The exchange kernel of grouped sends and receives: the twin runs every unit of the launch on this
// thread in turn (exchange_twin.h), so the grid shape is the parameter's own.
NCCLSCOPE_API void ncclscope_exchange_host(void** params, unsigned /*grid_x*/,
                                           unsigned /*block_x*/) {
  if (params == nullptr || params[0] == nullptr) return;
  const auto& args = *static_cast<const nc::ExchangeKernelArgs*>(params[0]);
  nc::Stall stall;
  const int64_t deadline = nc::MonotonicNs() + static_cast<int64_t>(args.timeout_ns);
  if (nc::RunExchangeTwin(args, deadline, &stall) || args.stall == nullptr) return;
  nc::RecordKernelStall(args.stall, stall);
}
NCCLSCOPE_API const unsigned long ncclscope_exchange_host_param_bytes =
    sizeof(nc::ExchangeKernelArgs);
