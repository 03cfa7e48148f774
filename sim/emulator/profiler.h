// The emulated NCCL's side of the profiler plugin API: loads NCCL_PROFILER_PLUGIN as NCCL 2.28.9
// does (ncclProfiler_v5, else v4), calls init per communicator and emits, for collectives, CollApi
// (v5) around the call, Coll at enqueue, and KernelCh when the operation actually begins to run on
// its stream (not when it is queued), stopped when it finishes. Point-to-point operations emit
// nothing. Every function is a no-op when no plugin is loaded or the mask does not ask for it.
#pragma once

#include <atomic>
#include <cstdint>

namespace ncclsim {

struct OpDesc;

// Per communicator, owned by the communicator (never freed, like it).
struct ProfilerComm {
  std::atomic<void*> ctx{nullptr};          // the plugin's context; null = opted out or finalized
  std::atomic<uint64_t> coll_seq[16] = {};  // NCCL's seqNumber: per collective function
};

// Per operation, carried in its OpDesc from the call to the stream worker.
struct ProfilerOp {
  void* api = nullptr;     // CollApi handle (v5)
  void* coll = nullptr;    // Coll handle: parent of the kernel event
  void* kernel = nullptr;  // KernelCh handle while running
};

// Loads the plugin (first call only) and calls its init for the new communicator. `name` is
// ncclConfig_t.commName or null. Returns the per-comm state, null when no plugin is in use.
// Thread-safe.
ProfilerComm* profilerCommInit(uint64_t comm_hash, const char* name, int nranks, int rank);
// Calls the plugin's finalize for the communicator. Thread-safe; pc may be null.
void profilerCommFinalize(ProfilerComm* pc);

// The calling thread issues / has issued collective d (CollApi start / stop).
void profilerCollApiStart(OpDesc* d);
void profilerCollApiStop(OpDesc* d);
// d is queued on its stream (Coll start and stop: "enqueued").
void profilerCollEnqueued(OpDesc* d);
// The stream worker begins / ends running d (KernelCh start, then KernelChStop state and stop).
void profilerKernelStart(OpDesc* d);
void profilerKernelStop(OpDesc* d);

}  // namespace ncclsim
