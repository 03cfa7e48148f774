// C API of the emulated libcuda.so.1 for the emulated libcupti.so.13 (sim/cupti): the emulated
// GPU's kernels. A launch is announced on the launching thread (where CUPTI correlates it with
// the thread's external correlation ids) and reported once it has run, with its times on the
// emulated GPU clock. Kernels are the emulated libnccl's operations (named as NCCL's device
// kernels) and the scenario runner's compute phases. A kernel that never ends is never reported,
// as on a GPU.
#pragma once

#include <cuda.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  const char* name;   // valid during the call
  uint64_t start_ns;  // emulated GPU clock (ncclsimGpuClockNs)
  uint64_t end_ns;
  uint32_t correlation;  // the launch's id (ncclsimKernelLaunch)
  uint32_t device;
  uint32_t stream;  // 0 for the default stream, else a number per stream handle
} ncclsimKernelRecord;

typedef struct {
  void (*launched)(uint32_t correlation, void* user);          // on the launching thread
  void (*ran)(const ncclsimKernelRecord* kernel, void* user);  // on the thread that ran it
  void* user;
} ncclsimKernelTap;

// Installs tap (copied), or removes it with NULL. Kernels launched before are not reported.
// Thread-safe.
void ncclsimSetKernelTap(const ncclsimKernelTap* tap);

// The emulated GPU clock: the host's CLOCK_MONOTONIC plus 2^50 ns, so a reader mixing the two
// clocks up is caught by tests. Thread-safe.
uint64_t ncclsimGpuClockNs(void);

// A launch: returns its correlation id (never 0) after announcing it to the tap. Thread-safe.
uint32_t ncclsimKernelLaunch(void);

// The kernel of launch `correlation` ran on `stream` of `device` (the launching thread's, which
// a stream's worker thread does not share) from start_ns to end_ns (GPU clock). Thread-safe.
void ncclsimKernelRan(const char* name, uint32_t correlation, int device, CUstream stream,
                      uint64_t start_ns, uint64_t end_ns);

// A compute kernel the calling thread launches and waits for: launches, takes ms of the emulated
// GPU's time (the caller is blocked meanwhile, as a step that synchronizes) and reports it.
// Thread-safe.
void ncclsimRunComputeKernel(const char* name, double ms);

#ifdef __cplusplus
}
#endif
