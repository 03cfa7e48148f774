#include "collectives/gpu_check/local_ranks.h"

#include <chrono>

#include "collectives/gpu_check/test_data.h"
#include "collectives/twins/bounded_wait.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

// How long past its own bound a kernel may run before the check calls it a hang.

std::string Failed(const Driver& cu, const char* what, CUresult r) {
  return std::string(what) + ": " + ErrorText(cu, r);
}

}  // namespace

bool SetUpLocalRanks(const Driver& cu, int nranks, size_t bytes, uint32_t first_epoch,
                     LocalRanks* l, std::string* error) {
  l->nranks = nranks;
  l->mem.assign(static_cast<size_t>(nranks), DeviceRank{});
  l->streams.assign(static_cast<size_t>(nranks), nullptr);
  l->start.assign(static_cast<size_t>(nranks), nullptr);
  l->end.assign(static_cast<size_t>(nranks), nullptr);
  for (int r = 0; r < nranks; ++r) {
    DeviceRank& m = l->mem[static_cast<size_t>(r)];
    if (!AllocateRank(cu, bytes, first_epoch, &m, error)) return false;
    CUresult res = cu.stream_create(&l->streams[static_cast<size_t>(r)], CU_STREAM_NON_BLOCKING);
    if (res == CUDA_SUCCESS) res = cu.event_create(&l->start[static_cast<size_t>(r)], 0);
    if (res == CUDA_SUCCESS) res = cu.event_create(&l->end[static_cast<size_t>(r)], 0);
    if (res != CUDA_SUCCESS) {
      *error = Failed(cu, "cuStreamCreate/cuEventCreate", res);
      return false;
    }
    l->view.staging[r] = reinterpret_cast<unsigned char*>(m.staging);
    l->view.scratch[r] = reinterpret_cast<unsigned char*>(m.scratch);
    l->view.signal[r] = reinterpret_cast<nc::Signal*>(m.signal);
  }
  return true;
}

void TearDownLocalRanks(const Driver& cu, LocalRanks* l) {
  // Streams and events live as long as the context (this process): a handful per rank count.
  for (DeviceRank& m : l->mem) FreeRank(cu, &m);
  l->mem.clear();
}

LaunchOutcome LaunchAll(const Driver& cu, const Kernels& k, LocalRanks& l, const Case& c,
                        const unsigned char* const* inputs, uint32_t epoch, uint64_t timeout_ns,
                        int absent) {
  LaunchOutcome out;
  const int n = l.nranks;
  for (int r = 0; r < n; ++r) {
    const DeviceRank& m = l.mem[static_cast<size_t>(r)];
    CUresult res = cu.memcpy_htod(m.input, inputs[r], c.bytes);
    if (res == CUDA_SUCCESS) res = cu.memset_d8(m.output, kPoison, c.bytes);
    if (res != CUDA_SUCCESS) {
      out.error = Failed(cu, "uploading the input", res);
      return out;
    }
  }
  // The uploads and the poison (default stream) before any kernel (non-blocking streams).
  if (CUresult res = cu.ctx_synchronize(); res != CUDA_SUCCESS) {
    out.error = Failed(cu, "cuCtxSynchronize", res);
    return out;
  }
  std::vector<KernelParams> params(static_cast<size_t>(n));
  std::vector<RankLaunch> launches(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const DeviceRank& m = l.mem[static_cast<size_t>(r)];
    const RankIo io{reinterpret_cast<const unsigned char*>(m.input),
                    reinterpret_cast<unsigned char*>(m.output),
                    reinterpret_cast<nc::KernelStall*>(m.stall)};
    params[static_cast<size_t>(r)] = MakeParams(c, l.view, r, io, epoch, timeout_ns);
    launches[static_cast<size_t>(r)] =
        RankLaunch{k.Of(c), c.blocks, c.threads, params[static_cast<size_t>(r)].Arg()};
  }
  return LaunchRanks(cu, l, launches.data(), timeout_ns, absent);
}

LaunchOutcome LaunchRanks(const Driver& cu, LocalRanks& l, const RankLaunch* launches,
                          uint64_t timeout_ns, int absent) {
  LaunchOutcome out;
  const int n = l.nranks;
  int last = -1;
  for (int r = 0; r < n; ++r) {
    const RankLaunch& x = launches[r];
    if (r == absent || x.blocks == 0) continue;
    void* params[] = {x.param};
    CUstream s = l.streams[static_cast<size_t>(r)];
    cu.event_record(l.start[static_cast<size_t>(r)], s);
    const auto t0 = std::chrono::steady_clock::now();
    const CUresult res =
        cu.launch_kernel(x.fn, x.blocks, 1, 1, x.threads, 1, 1, 0, s, params, nullptr);
    const auto t1 = std::chrono::steady_clock::now();
    cu.event_record(l.end[static_cast<size_t>(r)], s);
    if (res != CUDA_SUCCESS) {
      out.error = "rank " + std::to_string(r) + ": " + Failed(cu, "cuLaunchKernel", res);
      // The ranks already launched end by their bounded wait; wait for them all the same.
    }
    out.launch_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    last = r;
  }
  int stuck = -1;
  std::string why;
  if (!WaitKernels(cu, l.streams.data(), n, timeout_ns, &stuck, &why)) {
    out.hang = why == "timed out";
    out.error = "rank " + std::to_string(stuck) + "'s kernel: " + why;
    return out;
  }
  if (!out.error.empty()) return out;
  float ms = 0;
  if (last >= 0 && cu.event_elapsed_time(&ms, l.start[static_cast<size_t>(last)],
                                         l.end[static_cast<size_t>(last)]) == CUDA_SUCCESS) {
    out.last_rank_kernel_us = ms * 1000.0;
  }
  out.stalls.assign(static_cast<size_t>(n), nc::KernelStall{});
  for (int r = 0; r < n; ++r) {
    if (!ReadStall(cu, l.mem[static_cast<size_t>(r)], &out.stalls[static_cast<size_t>(r)])) {
      out.error = "reading rank " + std::to_string(r) + "'s stall record failed";
    }
  }
  return out;
}

bool DownloadOutput(const Driver& cu, const LocalRanks& l, int rank, size_t bytes,
                    unsigned char* out) {
  return cu.memcpy_dtoh(out, l.mem[static_cast<size_t>(rank)].output, bytes) == CUDA_SUCCESS;
}

}  // namespace ncclscope::gpu_check
