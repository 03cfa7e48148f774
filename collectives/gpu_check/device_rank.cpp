#include "collectives/gpu_check/device_rank.h"

#include <time.h>

#include <memory>

#include "collectives/device_code/device_code.h"
#include "collectives/gpu_check/kernel_params.h"
#include "collectives/include/ncclscope/moe.h"
#include "collectives/planner/exchange_kernel_args.h"
#include "collectives/twins/bounded_wait.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

}  // namespace

bool AllocateRank(const Driver& cu, size_t bytes, uint32_t first_epoch, DeviceRank* r,
                  std::string* error) {
  struct Want {
    CUdeviceptr* slot;
    size_t bytes;
    const char* name;
  };
  const Want wants[] = {{&r->input, bytes, "input"},
                        {&r->output, bytes, "output"},
                        {&r->staging, bytes, "staging"},
                        {&r->scratch, bytes, "scratch"},
                        {&r->signal, sizeof(nc::Signal), "flags"},
                        {&r->stall, sizeof(nc::KernelStall), "stall record"}};
  for (const Want& w : wants) {
    const CUresult res = cu.mem_alloc(w.slot, w.bytes);
    if (res != CUDA_SUCCESS) {
      *error = std::string("cuMemAlloc of the ") + w.name + " buffer (" + std::to_string(w.bytes) +
               " bytes): " + ErrorText(cu, res);
      FreeRank(cu, r);
      return false;
    }
  }
  if (!ResetRankFlags(cu, *r, first_epoch - 1)) {
    *error = "writing the flags failed";
    FreeRank(cu, r);
    return false;
  }
  return true;
}

void FreeRank(const Driver& cu, DeviceRank* r) {
  for (CUdeviceptr* p : {&r->input, &r->output, &r->staging, &r->scratch, &r->signal, &r->stall}) {
    if (*p != 0) cu.mem_free(*p);
    *p = 0;
  }
}

bool ResetRankFlags(const Driver& cu, const DeviceRank& r, uint32_t value) {
  // cuMemsetD32 would do for the flags, but the emulated driver has only cuMemsetD8.
  auto flags = std::make_unique<nc::Signal>();
  FillFlags(flags.get(), value);
  return cu.memcpy_htod(r.signal, flags.get(), sizeof(nc::Signal)) == CUDA_SUCCESS &&
         cu.memset_d8(r.stall, 0, sizeof(nc::KernelStall)) == CUDA_SUCCESS &&
         cu.ctx_synchronize() == CUDA_SUCCESS;
}

bool ReadStall(const Driver& cu, const DeviceRank& r, nc::KernelStall* out) {
  return cu.memcpy_dtoh(out, r.stall, sizeof(*out)) == CUDA_SUCCESS;
}

std::string StallText(const nc::KernelStall& k) {
  char text[160];
  nc::DescribeStall(
      nc::Stall{k.rank, k.peer, k.block, static_cast<nc::Barrier>(k.barrier), k.want, k.seen}, text,
      sizeof(text));
  return text;
}

CUfunction Kernels::Of(const Case& c) const {
  if (c.op == Op::kAlltoAll) return alltoall;
  if (c.op == Op::kExchange) return exchange;
  if (c.op == Op::kMoeDispatch) return moe_dispatch;
  if (c.op == Op::kMoeCombine) return moe_combine;
  const int a = c.algorithm == nc::Algorithm::kOneShot ? 0 : 1;
  const int d = c.dtype == nc::Dtype::kFp16 ? 0 : c.dtype == nc::Dtype::kFp32 ? 1 : 2;
  return allreduce[a][d];
}

bool LoadKernels(const Driver& cu, Kernels* k, std::string* error) {
  const nc::DeviceImage allreduce = nc::AllReduceFatbin(), alltoall = nc::AlltoAllFatbin(),
                        exchange = nc::ExchangeFatbin();
  size_t moe_bytes = 0;
  const void* moe = ncclscope_moe_fatbin(&moe_bytes);
  if (allreduce.size == 0 || alltoall.size == 0 || exchange.size == 0 || moe_bytes == 0) {
    *error = "this build has no device code (built without nvcc)";
    return false;
  }
  CUmodule m = nullptr, m2 = nullptr, m3 = nullptr, m4 = nullptr;
  CUresult res = cu.module_load_data(&m, allreduce.data);
  if (res == CUDA_SUCCESS) res = cu.module_load_data(&m2, alltoall.data);
  if (res == CUDA_SUCCESS) res = cu.module_load_data(&m3, exchange.data);
  if (res == CUDA_SUCCESS) res = cu.module_load_data(&m4, moe);
  if (res != CUDA_SUCCESS) {
    *error = "cuModuleLoadData: " + ErrorText(cu, res) +
             " (the fatbin carries sm_80, sm_90 and sm_100 cubins and sm_90 PTX)";
    return false;
  }
  for (int a = 0; a < 2; ++a) {
    for (int d = 0; d < 3; ++d) {
      res = cu.module_get_function(&k->allreduce[a][d], m, nc::kAllReduceKernelNames[a][d]);
      if (res != CUDA_SUCCESS) {
        *error = std::string("cuModuleGetFunction ") + nc::kAllReduceKernelNames[a][d] + ": " +
                 ErrorText(cu, res);
        return false;
      }
    }
  }
  struct Named {
    CUfunction* fn;
    CUmodule module;
    const char* name;
  };
  for (const Named& f : {Named{&k->alltoall, m2, nc::kAlltoAllKernelName},
                         Named{&k->exchange, m3, nc::kExchangeKernelName},
                         Named{&k->moe_dispatch, m4, NCCLSCOPE_MOE_DISPATCH_KERNEL},
                         Named{&k->moe_combine, m4, NCCLSCOPE_MOE_COMBINE_KERNEL}}) {
    res = cu.module_get_function(f.fn, f.module, f.name);
    if (res != CUDA_SUCCESS) {
      *error = std::string("cuModuleGetFunction ") + f.name + ": " + ErrorText(cu, res);
      return false;
    }
  }
  return true;
}

bool WaitStreams(const Driver& cu, const CUstream* streams, int n, int64_t deadline_ns, int* stuck,
                 std::string* error) {
  for (int i = 0; i < n; ++i) {
    for (;;) {
      const CUresult res = cu.stream_query(streams[i]);
      if (res == CUDA_SUCCESS) break;
      if (res != CUDA_ERROR_NOT_READY) {
        *error = "cuStreamQuery: " + ErrorText(cu, res);
        *stuck = i;
        return false;
      }
      if (nc::MonotonicNs() > deadline_ns) {
        *error = "timed out";
        *stuck = i;
        return false;
      }
      const timespec pause{0, 20000};
      nanosleep(&pause, nullptr);
    }
  }
  return true;
}

bool WaitKernels(const Driver& cu, const CUstream* streams, int n, uint64_t timeout_ns, int* stuck,
                 std::string* error) {
  return WaitStreams(cu, streams, n,
                     nc::MonotonicNs() + static_cast<int64_t>(timeout_ns) + kHangMarginNs, stuck,
                     error);
}

std::string LaunchAndWait(const Driver& cu, CUfunction fn, unsigned blocks, unsigned threads,
                          void* param, CUstream stream, CUdeviceptr stall, uint64_t timeout_ns,
                          bool* hang) {
  void* params[] = {param};
  const CUresult r = cu.launch_kernel(fn, blocks, 1, 1, threads, 1, 1, 0, stream, params, nullptr);
  if (r != CUDA_SUCCESS) return ErrorText(cu, r);
  int stuck = 0;
  std::string why;
  if (!WaitKernels(cu, &stream, 1, timeout_ns, &stuck, &why)) {
    *hang = why == "timed out";
    return why;
  }
  nc::KernelStall k{};
  if (cu.memcpy_dtoh(&k, stall, sizeof(k)) != CUDA_SUCCESS)
    return "reading the stall record failed";
  return k.code == 0 ? "" : "stalled: " + StallText(k);
}

}  // namespace ncclscope::gpu_check
