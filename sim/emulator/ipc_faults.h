// Run-time fault control of the emulated libcuda.so.1's IPC memory handles (target ncclsim_cuda),
// used by the scenario runner's ipc_open_fails fault (docs/scenarios.md) to test what a rank does
// when it cannot map a peer's memory.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// Nonzero: from now on every cuIpcOpenMemHandle of this process fails with CUDA_ERROR_MAP_FAILED,
// as a real driver's does when the peer's memory cannot be mapped (no P2P path, too many peers);
// 0: they succeed again. Thread-safe.
void ncclsimSetIpcOpenFails(int fails);

#ifdef __cplusplus
}
#endif
