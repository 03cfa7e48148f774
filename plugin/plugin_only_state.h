// The pools behind plugin-only recording (plugin_only_recorder.h): communicators and event
// handles, fixed and never freed, shared by the init code and the event callbacks.
#pragma once

#include <atomic>
#include <cstdint>

#include "plugin/kernel_channel_bits.h"
#include "plugin/profiler_abi.h"
#include "trace/ring_writer.h"

namespace ncclscope::plugin::plugin_only {

// One communicator recorded from the profiler's events.
struct Comm {
  uint64_t id = 0;  // NCCL's commHash: the trace id of its records
  int abi = 0;
  int rank = -1;
  int nranks = 0;
  std::atomic<uint64_t> coll_seq{0};
  // nranks counters per direction, allocated at init and never freed (events may outlive
  // finalize). Fetch-and-add: NCCL may emit a nonblocking communicator's P2p events on its own
  // group-launch thread.
  std::atomic<uint64_t>* send_seq = nullptr;
  std::atomic<uint64_t>* recv_seq = nullptr;
  std::atomic<bool> live{false};  // published: its fields are final
};

// What an event handle describes.
enum HandleKind : uint32_t {
  kKindFree = 0,
  kKindGroup = 1,  // GroupApi (v5) or Group (v4)
  kKindOp = 2,     // CollApi/P2pApi, then the Coll/P2p and the KernelCh events of that operation
};

// Where an operation handle stands.
enum OpStage : uint32_t {
  kStageApi = 0,       // inside the API call (CollApi/P2pApi started)
  kStageRecorded = 1,  // the record is in the ring (collective: at CollApi stop)
  kStageLaunched = 2,  // Coll/P2p seen: seq, slot and channel count are final
};

// One event handle. A CollApi/P2pApi handle is also returned for the Coll/P2p event it parents
// and for that operation's KernelCh events, so everything about one operation sits in one place
// and the channel counts need no second pool. All fields are atomics (relaxed, published through
// `tag` or `stage`): a recycled handle may be read by a late event of its previous use.
struct Handle {
  std::atomic<uint64_t> tag{0};  // kHandleTag | kind while in use
  std::atomic<Comm*> comm{nullptr};
  // Group.
  std::atomic<uint64_t> group_id{0};
  std::atomic<uint32_t> group_flags{0};  // trace::kFlagInGroup for a user group
  std::atomic<uint64_t> end_slot{0};     // its open group_end record
  std::atomic<int64_t> end_enter_ns{0};  // 0: no group_end record open
  std::atomic<uint32_t> end_tid{0};
  // Operation.
  std::atomic<uint32_t> stage{kStageApi};
  std::atomic<uint32_t> op{0};  // trace::OpType
  std::atomic<uint64_t> count{0};
  std::atomic<int32_t> dtype{-1};
  std::atomic<int32_t> root{-1};
  std::atomic<uint64_t> stream{0};
  std::atomic<int64_t> t_enter_ns{0};
  std::atomic<int64_t> t_exit_ns{0};
  std::atomic<uint32_t> tid{0};
  std::atomic<bool> tracked{false};  // its record waits for a device completion
  std::atomic<uint64_t> seq{0};
  std::atomic<int32_t> peer{-1};  // send/recv
  std::atomic<uint64_t> nccl_seq{0};
  std::atomic<uint64_t> slot{0};
  std::atomic<uint32_t> channels{1};
  std::atomic<uint32_t> started{0};
  std::atomic<uint32_t> stopped{0};
  // AlltoAll, Gather and Scatter, which NCCL 2.28.9 runs as Send/Recv parts (one P2pApi each):
  // a part's `whole` is the collective's handle (the call's one record); a group's `whole` is the
  // collective its next parts join. On the whole, `channels`, `started` and `stopped` add up its
  // remote parts' kernel channels (channels from 0, growing as parts launch); a part to the rank
  // itself has none in NCCL (plugin_only_parts.cpp).
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

}  // namespace ncclscope::plugin::plugin_only

namespace ncclscope::plugin::plugin_only {

// The live communicator behind a context NCCL hands back, or null when it is not one of ours.
// Thread-safe, lock-free (plugin_only_recorder.cpp).
Comm* CommOf(const void* context) noexcept;

// The handle behind a pointer NCCL hands back (whatever its kind and use), or null when it is not
// in our pool. Thread-safe, lock-free.
Handle* HandleOf(const void* handle) noexcept;

// The pool (kHandlePoolSize handles), null until this recorder took a communicator. Thread-safe.
Handle* HandlePool() noexcept;

// The next handle of the pool, reset to `kind` for communicator c. Recycled round-robin, skipping
// handles whose operation may still get events (a long kernel, one queued behind others, a hung
// one), up to a bound. Thread-safe, lock-free; the pool exists once a context does.
Handle* NewHandle(uint32_t kind, Comm* c) noexcept;

// The event-path pieces shared by plugin_only_events.cpp and plugin_only_parts.cpp. Hot path: no
// lock, no allocation.
// Our handle of `kind` behind p, or null.
Handle* HandleOfKind(const void* p, uint32_t kind) noexcept;
// Appends h's record with sequence number seq (`peer` for send/recv, `redop` for a reduction) and
// keeps its slot, seq and peer in h.
void WriteRecord(Handle& h, const Comm& c, uint64_t seq, int peer, int32_t redop = -1) noexcept;
uint64_t NextCollSeq(Comm& c) noexcept;
// The device_start / p2p_device_start record of h's first kernel channel.
void WriteStartMarker(const Handle& h, const Comm& c, uint8_t channel, uint64_t gpu_ns) noexcept;
// Stamps h's record's device completion; false when the ring refused it (no runtime, overwritten).
bool CompleteDeviceOf(const Handle& h) noexcept;

// AlltoAll, Gather and Scatter as one collective record each (plugin_only_parts.cpp). Each returns
// false when `part` is no part of such a call, and the caller goes on as for a send or receive.
// A P2pApi event opened `part` under `group`: it joins the call the thread is in when NCCL's NVTX
// range says that call is an AlltoAll, Gather or Scatter on c.
void JoinWhole(Comm& c, const void* group, Handle& part) noexcept;
bool PartStopped(Handle& part) noexcept;                     // its P2pApi stop
bool PartLaunched(Handle& part, uint8_t channels) noexcept;  // its P2p event
bool PartChannelStarted(const Handle& part, uint8_t channel, uint64_t gpu_ns) noexcept;
bool PartChannelStopped(const Handle& part) noexcept;  // one of its KernelChStop states

// NCCL's proxy progress of operations of c (plugin_only_progress.cpp), as the interposed mode
// follows it (proxy_progress.h), each known by its whole API call. Event path.
// ProxyOp start under parent (a Coll or P2p event's handle): the proxy op's handle, or null when
// it is not ours to follow (another process's PXN op, a parent not of c, a full pool).
void* StartProxyOp(Comm& c, const void* parent, const prof_abi::ProxyOpV4& d) noexcept;
// KernelCh start of launched operation h: the channel's handle (proxy_progress.h's, so that the
// channel shows in kernel_channels records); its KernelChStop state calls OnKernelChannelStop.
void* StartKernelChannel(Handle& h, uint8_t channel) noexcept;
void OnKernelChannelStop(Handle& h) noexcept;  // plugin_only_events.cpp

// Counters behind GetStats.
struct Counters {
  std::atomic<uint64_t> records{0};
  std::atomic<uint64_t> completions{0};
  std::atomic<uint64_t> markers{0};
  std::atomic<uint64_t> busy_reused{0};
};
Counters& GetCounters() noexcept;

}  // namespace ncclscope::plugin::plugin_only
