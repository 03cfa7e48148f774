// C API of the emulated libcuda.so.1 that the emulated libnccl.so.2 uses to run work on streams.
// Exported by libcuda.so.1 (target ncclsim_cuda) next to the cu* driver functions.
#pragma once

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

// Appends fn(arg) to stream s; it runs later on the stream's worker thread, after everything
// enqueued before it, and everything enqueued after waits for it to return. s may be NULL,
// CU_STREAM_LEGACY or CU_STREAM_PER_THREAD (all mean the one per-process default stream).
// Thread-safe; never blocks on the stream's work. The caller keeps ownership of arg until fn runs.
void ncclsimStreamEnqueue(CUstream s, void (*fn)(void*), void* arg);

// Waits at most timeout_ms for every stream of the process to run out of work, then stops waiting.
// Returns how many streams still have work (0 = all idle). Workers are never joined, so a stream
// blocked forever cannot hang the caller. Called automatically at process exit with the bound from
// NCCLSIM_EXIT_DRAIN_MS (default 1000). Thread-safe.
int ncclsimStreamsDrain(int timeout_ms);

#ifdef __cplusplus
}
#endif
