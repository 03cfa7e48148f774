#include "sim/emulator/launch.h"

#include <algorithm>
#include <atomic>

#include "sim/emulator/backoff_wait.h"
#include "sim/emulator/kernel_activity.h"
#include "sim/emulator/sim_stream.h"

namespace ncclsim {

namespace {

struct LaunchState {
  std::vector<std::unique_ptr<OpRun>> ops;
  std::atomic<bool> done{false};
  std::atomic<int> refs{0};  // stream tasks still holding this
  // One emulated NCCL kernel per launch, reported to the emulated CUPTI (kernel_activity.h).
  uint32_t correlation = 0;
  int device = 0;
  CUstream stream = nullptr;
};

void release(LaunchState* s) {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
}

void runLaunch(void* arg) {
  auto* s = static_cast<LaunchState*>(arg);
  const uint64_t start = ncclsimGpuClockNs();
  Backoff backoff;
  for (;;) {
    uint64_t now = nowNs();
    uint64_t wake = UINT64_MAX;
    bool moved = false;
    bool all = true;
    for (auto& op : s->ops) {
      moved |= op->progress(now, &wake);
      all &= op->finished();
    }
    if (all) break;
    if (moved) {
      backoff.reset();
    } else {
      backoff.pause(wake == UINT64_MAX ? 0 : wake);
    }
  }
  ncclsimKernelRan("ncclDevKernel_Generic", s->correlation, s->device, s->stream, start,
                   ncclsimGpuClockNs());
  s->done.store(true, std::memory_order_release);
  release(s);
}

void waitLaunch(void* arg) {
  auto* s = static_cast<LaunchState*>(arg);
  Backoff backoff;
  while (!s->done.load(std::memory_order_acquire)) backoff.pause();
  release(s);
}

}  // namespace

void launchOps(std::vector<std::unique_ptr<OpRun>> ops, const std::vector<CUstream>& streams) {
  if (ops.empty()) return;
  std::vector<CUstream> distinct;
  for (CUstream st : streams) {
    if (std::find(distinct.begin(), distinct.end(), st) == distinct.end()) distinct.push_back(st);
  }
  auto* s = new LaunchState;
  s->ops = std::move(ops);
  s->refs.store(int(distinct.size()));
  CUdevice device = 0;
  if (cuCtxGetDevice(&device) == CUDA_SUCCESS) s->device = device;
  s->stream = distinct[0];
  s->correlation = ncclsimKernelLaunch();
  ncclsimStreamEnqueue(distinct[0], runLaunch, s);
  for (size_t i = 1; i < distinct.size(); ++i) ncclsimStreamEnqueue(distinct[i], waitLaunch, s);
}

}  // namespace ncclsim
