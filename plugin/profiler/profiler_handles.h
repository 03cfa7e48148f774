// The profiler's communicators (contexts) and event handles, one pool of each for both ways the
// profiler runs: beside the interposer, which records the calls (the profiler adds device markers
// and proxy progress, profiler_plugin.h), and alone, as the recorder (plugin_only_recorder.h).
// Both pools are fixed and never freed: NCCL may hand a handle back after its stop, and a parent
// handle to a child event after the parent stopped.
//
// Every function here is noexcept, lock-free, allocation-free and system-call-free unless it says
// otherwise; thread-safe as NCCL calls the profiler (application threads, NCCL's proxy thread).
#pragma once

#include <atomic>
#include <cstdint>

#include "plugin/profiler/kernel_channel_bits.h"
#include "plugin/profiler/proxy_progress.h"
#include "plugin/runtime/comm_state.h"

namespace ncclscope::plugin::profiler {

inline constexpr uint32_t kMaxContexts = 1024;
inline constexpr uint32_t kHandlePoolSize = 16384;  // power of two: a ring of recent events
inline constexpr uint32_t kNameBytes = 64;

// One NCCL communicator as the profiler sees it (NCCL's per-comm plugin context). Its fields are
// final once `live` is set, except the atomics.
struct Context {
  int abi = 0;  // table version NCCL called init through
  int rank = -1;
  int nranks = -1;
  // Our trace id: the interposer's (from the unique id), or NCCL's commHash when the profiler
  // records. 0 when the creation could not be matched.
  uint64_t comm_id = 0;
  // The profiler records this communicator's calls itself (plugin-only recording).
  bool records = false;
  std::atomic<bool> live{false};

  // Beside the interposer: NCCL's commHash and name, the interposer's CommState (found at the
  // first event that needs it, a bounded number of tries), and the highest collective number a
  // device_start was written for (the parts of one AlltoAll, Gather or Scatter share it).
  uint64_t nccl_comm_hash = 0;
  char name[kNameBytes] = {};
  std::atomic<CommState*> state{nullptr};
  std::atomic<uint32_t> state_lookups{0};
  std::atomic<uint64_t> last_coll_marker{0};

  // Recording: the per-communicator collective counter and nranks counters per direction of
  // sends and receives (allocated at init, never freed: events may outlive finalize).
  // Fetch-and-add: NCCL may emit a nonblocking communicator's P2p events on its own thread.
  std::atomic<uint64_t> coll_seq{0};
  std::atomic<uint64_t>* send_seq = nullptr;
  std::atomic<uint64_t>* recv_seq = nullptr;
};

// What an event handle describes.
enum HandleKind : uint32_t {
  kKindFree = 0,
  kKindGroup = 1,  // GroupApi (v5) or Group (v4); recording only
  kKindOp = 2,     // an operation: its API event, its Coll/P2p and KernelCh events
};

// Where an operation handle stands.
enum OpStage : uint32_t {
  kStageApi = 0,       // API event started, the operation not numbered yet (recording)
  kStageNumbered = 1,  // (op, seq) final: the interposer's call, or the record this recorder wrote
  kStageLaunched = 2,  // Coll/P2p seen: kernel channel and proxy events may follow
};

// One event handle. Beside the interposer an API event and its Coll/P2p event each get one (the
// latter copies the former's number); when recording, the API event's handle is also returned
// for its Coll/P2p and carries the record's fields. All fields are atomics (relaxed, published
// through `tag` or `stage`): a recycled handle may be read by a late event of its previous use.
struct Handle {
  std::atomic<uint64_t> tag{0};  // kHandleTag | kind while in use
  std::atomic<Context*> ctx{nullptr};
  // Group (recording).
  std::atomic<uint64_t> group_id{0};
  std::atomic<uint32_t> group_flags{0};  // trace::kFlagInGroup for a user group
  std::atomic<uint64_t> end_slot{0};     // its open group_end record
  std::atomic<int64_t> end_enter_ns{0};  // 0: no group_end record open
  std::atomic<uint32_t> end_tid{0};
  // Operation: who it is.
  std::atomic<uint32_t> stage{kStageApi};
  std::atomic<uint32_t> op{0};        // trace::OpType; 0 unknown
  std::atomic<uint64_t> seq{0};       // our sequence number (per comm, or per comm/peer); 0 unknown
  std::atomic<int32_t> peer{-1};      // a send's, a receive's or a part's peer; -1 otherwise
  std::atomic<uint64_t> nccl_seq{0};  // Coll: NCCL's per-function seqNumber
  // Operation: the call's record (recording).
  std::atomic<uint64_t> count{0};
  std::atomic<int32_t> dtype{-1};
  std::atomic<int32_t> root{-1};
  std::atomic<uint64_t> stream{0};
  std::atomic<int64_t> t_enter_ns{0};
  std::atomic<int64_t> t_exit_ns{0};
  std::atomic<uint32_t> tid{0};
  std::atomic<bool> tracked{false};  // its record waits for a device completion
  std::atomic<uint64_t> slot{0};
  // Operation: its kernel channels. `channels` counts NCCL's nChannels, `stopped` the
  // KernelChStop states (recording: the device completion); `started` the KernelCh starts (the
  // first writes the start marker).
  std::atomic<uint32_t> channels{1};
  std::atomic<uint32_t> started{0};
  std::atomic<uint32_t> stopped{0};
  // AlltoAll, Gather and Scatter when recording, which NCCL 2.28.9 runs as Send/Recv parts (one
  // P2pApi each): a part's `whole` is the collective's handle (the call's one record); a group's
  // `whole` is the collective its next parts join. On the whole, `channels`, `started` and
  // `stopped` add up its remote parts' kernel channels (plugin_only_parts.cpp).
  std::atomic<Handle*> whole{nullptr};
  std::atomic<uint32_t> parts{0};           // the parts NCCL appends for this rank
  std::atomic<uint32_t> parts_joined{0};    // P2pApi events seen
  std::atomic<uint32_t> parts_stopped{0};   // P2pApi stops seen: the last one records the call
  std::atomic<uint32_t> remote_parts{0};    // of those, the parts with another rank as peer
  std::atomic<uint32_t> parts_launched{0};  // P2p events of remote parts seen
  std::atomic<bool> done{false};            // the device completion was stamped
  // Which of its kernel channels started and stopped (kernel_channels records, proxy_progress.h).
  KernelChannelBits kernel_channels;
};

inline constexpr uint64_t kHandleTag = 0x4f4c'4e50'0000'0000ULL;  // "PNLO" in the high half

// A new context for NCCL's init, or null when all kMaxContexts are taken. Cold path; the caller
// fills it and sets `live`.
Context* NewContext() noexcept;
// The live context behind a pointer NCCL hands back, or null when it is not one of ours.
Context* ContextOf(const void* context) noexcept;
// Whether p points into the context pool (live or not).
bool InContextPool(const void* p) noexcept;

// Allocates the handle pool if it does not exist yet; false when it cannot be (out of memory).
// Cold path (init); thread-safe.
bool EnsureHandlePool() noexcept;
// The pool (kHandlePoolSize handles), null until a context exists.
Handle* HandlePool() noexcept;
// The handle behind a pointer NCCL hands back (whatever its kind and use), or null.
Handle* HandleOf(const void* handle) noexcept;
// Our handle of `kind` behind p, or null.
Handle* HandleOfKind(const void* p, uint32_t kind) noexcept;
// The launched operation behind a KernelCh or ProxyOp event's parent, when it is one of ours of
// context c; else null.
Handle* OperationHandle(const void* parent, const Context* c) noexcept;
// The next handle of the pool, reset to `kind` for context c. Recycled round-robin, skipping
// handles whose operation may still get events, up to a bound (then counted in busy_reused).
Handle* NewHandle(uint32_t kind, Context* c) noexcept;
uint64_t BusyReused() noexcept;

// Who h's operation is in the records (a part of an AlltoAll, Gather or Scatter being recorded
// is its whole call), for its proxy operations and kernel_channels records.
OperationIdentity IdentityOf(const Handle& h, const Context& c) noexcept;

}  // namespace ncclscope::plugin::profiler
