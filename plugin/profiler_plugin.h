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
// event handles live in fixed process-wide pools that are never freed (NCCL may hand a parent
// handle to a child event after the parent stopped); a full pool opts out (null context or handle,
// one warning) and never hurts the host.
#pragma once

#include <atomic>
#include <cstdint>

#include "plugin/comm_state.h"
#include "plugin/kernel_channel_bits.h"
#include "plugin/profiler_abi.h"

namespace ncclscope::plugin::profiler {

inline constexpr uint32_t kMaxContexts = 1024;
inline constexpr uint32_t kHandlePoolSize = 8192;  // power of two: a ring of recent events
inline constexpr uint32_t kNameBytes = 64;

// The default activation mask (always on, cheap: a few events per operation and two per kernel
// channel). Proxy detail (ProxyOp, ProxyStep) is added by proxy_mask.h. The probe ORs its bits
// into NCCL's mask and never clears another plugin's.
inline constexpr uint64_t kWantedMaskV5 =
    prof_abi::kCollApi | prof_abi::kP2pApi | prof_abi::kColl | prof_abi::kP2p | prof_abi::kKernelCh;
inline constexpr uint64_t kWantedMaskV4 = prof_abi::kColl | prof_abi::kP2p | prof_abi::kKernelCh;

// One NCCL communicator as the profiler sees it (NCCL's per-comm plugin context).
struct Context {
  int abi = 0;  // table version NCCL called init through
  int rank = -1;
  int nranks = -1;
  uint64_t nccl_comm_hash = 0;
  uint64_t comm_id = 0;  // our trace id; 0 when the creation could not be matched
  char name[kNameBytes] = {};
  std::atomic<CommState*> state{nullptr};  // found at the first collective, cached
  std::atomic<uint32_t> state_lookups{0};  // bounded: a handle we never registered stays unknown
  // The highest collective number a device_start was written for: the P2p parts of one AlltoAll,
  // Gather or Scatter share their collective's number and get one marker.
  std::atomic<uint64_t> last_coll_marker{0};
};

// An event handle we return to NCCL: a CollApi/P2pApi (v5+), Coll or P2p event. The tag at offset
// 0 tells our handles from anything else a parentObj could be.
struct EventHandle {
  std::atomic<uint64_t> tag{0};
  std::atomic<Context*> ctx{nullptr};
  std::atomic<uint64_t> seq{0};       // our sequence number (per comm, or per comm/peer); 0 unknown
  std::atomic<uint64_t> nccl_seq{0};  // Coll: NCCL's per-function seqNumber
  std::atomic<uint32_t> op{0};        // trace::OpType of the operation; 0 unknown
  std::atomic<int32_t> peer{-1};      // send/recv: the peer's comm rank
  std::atomic<uint32_t> started{0};   // Coll/P2p: a kernel channel started (marker written)
  // Coll/P2p: its kernel channels (kernel_channels records).
  KernelChannelBits channels;
};

// The callbacks behind every exported table (profiler_v4.cpp, profiler_v5.cpp; startEvent is
// profiler_event.h's StartEvent). `abi` is 4, 5 or 6. Thread-safe as NCCL calls them.
ncclResult_t Init(int abi, void** context, uint64_t comm_hash, int* mask, const char* comm_name,
                  int nranks, int rank) noexcept;
ncclResult_t StopEvent(void* handle) noexcept;
ncclResult_t RecordEventState(void* handle, int state, prof_abi::StateArgsV4* args) noexcept;
ncclResult_t Finalize(void* context) noexcept;

// Counters for tests and the benchmark. Thread-safe.
struct Stats {
  uint64_t contexts = 0;
  uint64_t unresolved_contexts = 0;  // creation not matched to one of ours
  uint64_t markers = 0;              // device_start records written
  uint64_t unmapped_markers = 0;     // of which the operation's sequence number was unknown
  uint64_t p2p_markers = 0;          // p2p_device_start records written (included in markers)
};
Stats GetStats() noexcept;

// The handle pool, for the background thread's kernel_channels scan (proxy_progress.h).
EventHandle* HandlePool() noexcept;
// The handle behind a parentObj if it is one of ours of a Coll or P2p event, else null.
EventHandle* OperationHandle(const void* parent) noexcept;
// Whether any communicator is attached, to this mode or the plugin-only recorder (the background
// thread's work is skipped otherwise).
bool AnyContext() noexcept;

}  // namespace ncclscope::plugin::profiler
