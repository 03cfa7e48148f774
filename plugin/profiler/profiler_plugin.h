// libncclscope.so as an NCCL profiler plugin (NCCL_PROFILER_PLUGIN=<path>/libncclscope.so, which
// also works while it is LD_PRELOADed: NCCL dlopens the object already loaded). It asks NCCL for
// the API, Coll, P2p and KernelCh events and writes into the process's ring the one fact the
// records of calls cannot show: that the device work of an operation STARTED (device_start for
// collectives, AlltoAll, Gather and Scatter included, whose NCCL 2.28 events are P2pApi/P2p;
// p2p_device_start for send/recv). A rank whose kernel for #N never started while its peers' did
// is the one whose device is stuck. With proxy detail on (proxy_mask.h) it also keeps where each
// network transfer of NCCL's proxy stands (proxy_progress.h).
//
// Every callback is noexcept, allocation-free, lock-free and system-call-free after the first use
// on a thread; callbacks come from the application's threads and NCCL's proxy thread. Contexts and
// event handles live in fixed process-wide pools that are never freed (profiler_handles.h), shared
// with plugin-only recording; a full pool opts out (null context or handle, one warning) and never
// hurts the host. Files: the tables (profiler_v4.cpp, profiler_v5.cpp), the one event path
// (profiler_event.h, profiler_events.cpp), the init and the interposer's numbers
// (profiler_plugin.cpp, profiler_numbering.h).
#pragma once

#include <cstdint>

#include "plugin/core/profiler_abi.h"

namespace ncclscope::plugin::profiler {

// The default activation mask (always on, cheap: a few events per operation and two per kernel
// channel). Proxy detail (ProxyOp, ProxyStep) is added by proxy_mask.h. The probe ORs its bits
// into NCCL's mask and never clears another plugin's.
inline constexpr uint64_t kWantedMaskV5 =
    prof_abi::kCollApi | prof_abi::kP2pApi | prof_abi::kColl | prof_abi::kP2p | prof_abi::kKernelCh;
inline constexpr uint64_t kWantedMaskV4 = prof_abi::kColl | prof_abi::kP2p | prof_abi::kKernelCh;

// The callbacks behind every exported table (profiler_v4.cpp, profiler_v5.cpp; startEvent is
// profiler_event.h's StartEvent). `abi` is 4, 5 or 6. Thread-safe as NCCL calls them.
ncclResult_t Init(int abi, void** context, uint64_t comm_hash, int* mask, const char* comm_name,
                  int nranks, int rank) noexcept;
ncclResult_t StopEvent(void* handle) noexcept;
ncclResult_t RecordEventState(void* handle, int state, prof_abi::StateArgsV4* args) noexcept;
ncclResult_t Finalize(void* context) noexcept;

// Counters for tests and the benchmark. Thread-safe.
struct Stats {
  uint64_t contexts = 0;             // attached beside the interposer
  uint64_t unresolved_contexts = 0;  // creation not matched to one of ours
  uint64_t markers = 0;              // device_start records written (recording included)
  uint64_t unmapped_markers = 0;     // of which the operation's sequence number was unknown
  uint64_t p2p_markers = 0;          // p2p_device_start records written (included in markers)
};
Stats GetStats() noexcept;

// Whether any communicator is attached, beside the interposer or recording (the background
// thread's work is skipped otherwise). Thread-safe, lock-free (profiler_handles.cpp).
bool AnyContext() noexcept;

}  // namespace ncclscope::plugin::profiler
