#include "sim/emulator/kernel_activity.h"

#include <time.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace {

constexpr uint64_t kGpuClockOffsetNs = uint64_t{1} << 50;

std::mutex g_tap_mu;  // the tap is replaced rarely; reports copy it under the lock
ncclsimKernelTap g_tap{};
std::atomic<bool> g_tapped{false};
std::atomic<uint32_t> g_next_correlation{1};

bool currentTap(ncclsimKernelTap* out) {
  if (!g_tapped.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(g_tap_mu);
  *out = g_tap;
  return out->ran != nullptr;
}

int currentDevice() {
  CUdevice device = 0;
  return cuCtxGetDevice(&device) == CUDA_SUCCESS ? device : 0;
}

}  // namespace

extern "C" {

void ncclsimSetKernelTap(const ncclsimKernelTap* tap) {
  std::lock_guard<std::mutex> lock(g_tap_mu);
  g_tap = tap != nullptr ? *tap : ncclsimKernelTap{};
  g_tapped.store(tap != nullptr, std::memory_order_release);
}

uint64_t ncclsimGpuClockNs(void) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec) +
         kGpuClockOffsetNs;
}

uint32_t ncclsimKernelLaunch(void) {
  uint32_t id = g_next_correlation.fetch_add(1, std::memory_order_relaxed);
  if (id == 0) id = g_next_correlation.fetch_add(1, std::memory_order_relaxed);
  ncclsimKernelTap tap;
  if (currentTap(&tap) && tap.launched != nullptr) tap.launched(id, tap.user);
  return id;
}

void ncclsimKernelRan(const char* name, uint32_t correlation, int device, CUstream stream,
                      uint64_t start_ns, uint64_t end_ns) {
  ncclsimKernelTap tap;
  if (!currentTap(&tap)) return;
  const auto handle = reinterpret_cast<uintptr_t>(stream);
  ncclsimKernelRecord k{name,
                        start_ns,
                        end_ns,
                        correlation,
                        static_cast<uint32_t>(device),
                        static_cast<uint32_t>(handle ^ (handle >> 32))};
  tap.ran(&k, tap.user);
}

void ncclsimRunComputeKernel(const char* name, double ms) {
  const uint32_t id = ncclsimKernelLaunch();
  const uint64_t start = ncclsimGpuClockNs();
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
  ncclsimKernelRan(name, id, currentDevice(), nullptr, start, ncclsimGpuClockNs());
}

}  // extern "C"
