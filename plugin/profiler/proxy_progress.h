// Where NCCL's proxy stands, per (operation, channel, peer, side), from ProxyOp and ProxyStep
// events, and which kernel channels of an operation started and stopped (KernelCh). Kept as a few
// counters per proxy operation in fixed pools, not one record per step: the background thread
// publishes a proxy_progress record for each proxy operation that stayed in flight across one of
// its ticks (again when it moved, and once when it ended), and a kernel_channels record for each
// operation whose channels have not all stopped. An operation that starts and ends between two
// ticks costs the ring nothing. Field packing: trace/record.h.
//
// NCCL 2.28.9 (src/transport/net.cc, sendProxyProgress/recvProxyProgress) emits ProxyOp and
// ProxyStep for network transfers only (a peer reached over NVLink or shared memory has none), one
// ProxyOp per (channel, peer, side) of an operation, up to NCCL_STEPS (8) step handles in flight,
// numbered from 0 and ended in order. Step states: send 8 SendGPUWait (buffer posted to the GPU),
// 20 SendPeerWait (data ready, isend not accepted yet: no credit from the receiver; recorded again
// at every poll), 9 SendWait (isend posted, waiting for the network), stop when the network
// completed it; receive: start (buffer free), 10 RecvWait (irecv posted, waiting for data), 11
// RecvFlushWait (data arrived), 12 RecvGPUWait (handed to the GPU), stop when the GPU consumed it.
//
// Event-path functions: noexcept, no lock, no allocation, no system call. Thread-safe as NCCL calls
// them (one proxy thread per communicator family, PXN aside: an operation progressed by another
// process's proxy has its events there, where the parent is foreign, so it is not tracked).
#pragma once

#include <atomic>
#include <cstdint>

#include "plugin/core/profiler_abi.h"
#include "plugin/profiler/kernel_channel_bits.h"
#include "trace/ring_writer.h"

namespace ncclscope::plugin::profiler {

inline constexpr uint32_t kProxyOpPoolSize = 4096;   // power of two
inline constexpr uint32_t kKernelChPoolSize = 4096;  // power of two
inline constexpr uint32_t kStepsPerOp = 8;           // NCCL_STEPS

struct ProxyOpSlot;

// One step handle: NCCL keeps step k's handle in its slot k % 8, and so do we.
struct ProxyStepSlot {
  std::atomic<uint64_t> tag{0};
  ProxyOpSlot* op = nullptr;  // fixed: the slot this step array belongs to
  std::atomic<uint32_t> step{0};
  std::atomic<uint32_t> state{0};       // NCCL state, 0 posted with no state yet
  std::atomic<int64_t> state_since{0};  // host ns the state was entered
};

struct ProxyOpSlot {
  std::atomic<uint64_t> tag{0};
  // 1 from start until stop, or until its final record when the background thread published it.
  std::atomic<uint32_t> busy{0};
  // Copied from the parent operation at start (the parent handle may be recycled later).
  std::atomic<uint64_t> comm_id{0};
  std::atomic<uint64_t> seq{0};
  std::atomic<uint32_t> op{0};
  std::atomic<int32_t> peer{-1};
  std::atomic<uint32_t> channel{0};
  std::atomic<uint32_t> is_send{0};
  std::atomic<uint32_t> n_steps{0};
  std::atomic<uint32_t> posted{0}, sent{0}, received{0}, done{0};
  std::atomic<uint32_t> ended{0};
  // Background thread only.
  std::atomic<uint32_t> ticks_seen{0};
  std::atomic<uint32_t> published{0};
  std::atomic<uint64_t> published_key{0};
  ProxyStepSlot steps[kStepsPerOp];
};

// Called when a kernel channel reaches KernelChStop, with the owner given to StartKernelCh.
using KernelChStopHook = void (*)(void* owner) noexcept;

struct KernelChSlot {
  std::atomic<uint64_t> tag{0};
  std::atomic<KernelChannelBits*> bits{nullptr};
  std::atomic<uint32_t> channel{0};
  std::atomic<KernelChStopHook> on_stop{nullptr};
  std::atomic<void*> owner{nullptr};
};

// Who an operation is in the records: the trace id of its communicator, its number and OpType
// (for a part of an AlltoAll, Gather or Scatter, the whole call's), and the peer of a send or
// receive (-1 otherwise).
struct OperationIdentity {
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  uint32_t op = 0;
  int32_t peer = -1;
};

// Whether a ProxyOp was started by this process's proxy. PXN: a peer process's proxy progresses
// some operations of ours, and their events (with that process's pid, parent and context) are
// emitted there; here a parentObj with another pid is never ours, whatever it points at.
bool IsOwnProxyOp(const prof_abi::ProxyOpV4& d) noexcept;
// ProxyOp start of an operation the caller checked is ours (IsOwnProxyOp, its parent), known by
// `who` (its peer unused: the proxy's peer is d.peer); d gives channel, side and step count.
// Returns the handle, or null when the pool is full.
void* StartProxyOpFor(const OperationIdentity& who, const prof_abi::ProxyOpV4& d) noexcept;
// ProxyStep start: parent is the ProxyOp handle. Returns the step handle or null.
void* StartProxyStep(const void* parent, int step) noexcept;
// KernelCh start of an operation (ours) whose channels `bits` keeps: marks the channel started,
// returns the handle that NCCL passes to the KernelChStop state and the stop. At KernelChStop the
// channel is marked stopped, then on_stop(owner) is called when on_stop is not null.
void* StartKernelCh(KernelChannelBits& bits, uint8_t channel, KernelChStopHook on_stop,
                    void* owner) noexcept;
// State and stop of a handle that may be one of the above: returns false when it is none of ours
// (the caller tries its own kinds).
bool RecordProxyState(void* handle, int state) noexcept;
bool StopProxyHandle(void* handle) noexcept;

// Writes this tick's proxy_progress and kernel_channels records into `ring` (of every operation in
// the profiler's handle pool, profiler_handles.h). Background thread only (one caller); no
// allocation, no lock.
void PublishProgress(trace::RingWriter& ring, int64_t now_ns) noexcept;
// One operation's kernel_channels record when its channels changed since it was last written (and
// it did not start and stop all of them between two ticks). Background thread only.
void PublishChannelBits(trace::RingWriter& ring, KernelChannelBits& bits,
                        const OperationIdentity& who, int64_t now_ns) noexcept;

}  // namespace ncclscope::plugin::profiler
