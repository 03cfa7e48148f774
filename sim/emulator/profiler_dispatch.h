// The emulated NCCL's calls into a loaded profiler plugin, shared by the host-side events
// (profiler.cpp) and the stream workers' device and proxy events (profiler_proxy.cpp). Like
// NCCL's src/plugin/profiler.cc, every event is built as a v5 descriptor; a v4 table gets it
// through the same adapter NCCL 2.28.9 uses (src/plugin/profiler/profiler_v4.cc): API events and
// states 23/24 are dropped, Coll and P2p are parented to the Group event.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "sim/emulator/profiler_abi.h"

namespace ncclsim::prof {

// NCCL's ncclProfilerEventMask: one int for the process, written by the plugin (at init or
// whenever it likes) and read on every emission.
int mask();
int* maskAddress();

// Loads the plugin on the first call (NCCL_PROFILER_PLUGIN, as 2.28.9); true when a v5 or v4
// table is in use. Thread-safe.
bool load();
// True once a table is in use; a relaxed read, for the fast paths. Thread-safe.
bool loaded();

// The plugin's init and finalize. Thread-safe.
ncclResult_t init(void** ctx, uint64_t comm_hash, const char* name, int nnodes, int nranks,
                  int rank);
void finalize(void* ctx);

// One event. A null handle from the plugin means "not tracked": stop and record skip it, as NCCL
// does. Thread-safe as far as the plugin is.
void start(void* ctx, void** handle, profabi::Descr5* d);
void stop(void* handle);
void record(void* handle, int state, profabi::StateArgs* args);

// The process id NCCL puts in ProxyOp events (read once at load).
pid_t pid();
// Channels an operation is split over (NCCLSIM_NCHANNELS, default 2).
int channels();
// The device's global timer: CLOCK_MONOTONIC plus a large per-process offset, so that a GPU
// timestamp can never pass for a host one. Thread-safe.
uint64_t gpuTimerNs();

}  // namespace ncclsim::prof
