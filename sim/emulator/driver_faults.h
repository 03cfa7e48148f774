// Run-time fault controls of the emulated libcuda.so.1 (target ncclsim_cuda), used by the scenario
// runner's ipc_open_fails and device_memory_limit faults (docs/scenarios.md) to test what a rank
// does when it cannot map a peer's memory or allocate its own.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// Nonzero: from now on every cuIpcOpenMemHandle of this process fails with CUDA_ERROR_MAP_FAILED,
// as a real driver's does when the peer's memory cannot be mapped (no P2P path, too many peers);
// 0: they succeed again. Thread-safe.
void ncclsimSetIpcOpenFails(int fails);

// From now on a cuMemAlloc that would bring this process's live device allocations past `bytes`
// fails with CUDA_ERROR_OUT_OF_MEMORY, as on a GPU with only that much free; 0 lifts the limit.
// Allocations made before count. Thread-safe.
void ncclsimSetDeviceMemoryLimit(size_t bytes);

#ifdef __cplusplus
}
#endif
