// Plugin-only recording: libncclscope.so loaded by NCCL as its profiler plugin
// (NCCL_PROFILER_PLUGIN) without LD_PRELOAD, as with a statically linked NCCL (some conda and
// source builds of PyTorch), where no NCCL call reaches the interposer. The profiler's events are
// then the only source of records, and this recorder writes the ring the interposer would have
// written: the communicator (NCCL's commHash as its id), one record per collective and per
// send/recv with the interposer's sequence numbers, their device completion from the kernel
// channel events, and the background thread (heartbeat, watchdog) started with the runtime.
//
// Which side records is decided per communicator at the profiler's init: when an interposed call
// created the runtime, the interposer records and the profiler only adds device markers
// (profiler_plugin.h), so no call is ever recorded twice. This recorder takes a communicator only
// when it created the runtime itself (no interposed call came first) and the communicator's
// creation is not an interposed one.
//
// Communicator id: NCCL's commHash (equal on every member rank; a hash of the unique id, or of the
// parent's hash, split count and color for a split), not the interposer's id (derived from the
// unique id's bytes, trace/identity.h): the two never meet in one job, whose ranks are all
// recorded one way or all the other (mixing them is not supported).
//
// What the events carry, and what is lost (NCCL 2.28.9, src/enqueue.cc, src/group.cc,
// src/plugin/profiler.cc):
//   - GroupApi: one per outermost group, implicit ones included (groupDepth 1 = the group NCCL
//     opens around a single call, > 1 = inside the user's ncclGroupStart). Each gets a group id;
//     only user groups set kFlagInGroup and get a group_end record (entered at the
//     GroupEndApiStart state, closed at the GroupApi stop; its result is unknown: ncclSuccess).
//   - CollApi (v5): function, count, datatype, root and stream, on the calling thread inside the
//     call. The collective's record is written at its stop (enqueued), numbered per communicator.
//     The reduction op is in no event: it comes from NCCL's own NVTX range around the call when
//     libncclscope.so is also the NVTX injection (nvtx_nccl_payload_calls.h; same function and
//     commHash required), else records carry redop -1 and a desync on the op needs the
//     interposer. Calls NCCL drops before any event (count 0, 1-rank communicators,
//     rejected arguments) take no number.
//   - P2pApi (v5) has no peer; the P2p event at group end (parent: the P2pApi) does. A send or
//     receive is recorded there, numbered per (communicator, peer, direction) in NCCL's order.
//     AlltoAll, Gather and Scatter run through this path in NCCL 2.28 (one P2pApi per part,
//     function "Send"/"Recv", the peer included). Inside NCCL's own NVTX range of the call
//     (libncclscope.so as the NVTX injection) the parts make one collective record, numbered with
//     the other collectives, completed when all parts' channels stopped (plugin_only_parts.cpp);
//     without it (NCCL_NVTX_DISABLE=1, no injection) they are recorded as their sends and
//     receives (one per peer, itself included): a rank's parts still match its peers' parts, but
//     which collective they made up is lost.
//   - KernelCh (parent: Coll or P2p): the first channel's start writes a device_start
//     (collective) or p2p_device_start (send/recv) record; the record's device completion is
//     stamped when all nChannels channels reached KernelChStop, with the host time the last one
//     arrived (pTimer is a GPU clock). Graph-captured operations are recorded untracked (their
//     kernels run at each replay).
//   - ProxyOp/ProxyStep (proxy detail, proxy_mask.h) and KernelCh: followed by proxy_progress.h
//     on the event path both modes share (profiler_events.cpp), each known by its API call's
//     record (a part of an AlltoAll, Gather or Scatter by the whole call's: IdentityOf,
//     profiler_handles.h), so the background thread's proxy_progress and kernel_channels records
//     name the stage of a device stall.
//   - v4 tables (NCCL 2.27) have no API events: Coll and P2p events at launch give the records
//     (entry and exit times are the launch time, no stream, AllGather and Broadcast counts in
//     bytes of ncclInt8 as NCCL reports them, no user group boundaries, no group_end records).
//   - A communicator appears at the profiler's init, which NCCL calls late inside the creation
//     (after the bootstrap): a rank stuck in creation before that point is not recorded, so
//     init-hang verdicts need the interposer. The profiler never learns the ncclComm_t, so
//     NCCLSCOPE_ON_HANG=abort has no communicator to abort.
//
// The events take the profiler's one event path (profiler_events.cpp); what differs from the
// interposed mode is how an operation is numbered, and that this recorder writes its record when
// it numbers it (profiler_numbering.h, plugin_only_events.cpp).
//
// Hot path (every event after init): no lock, no allocation, no system call after a thread's
// first record; fixed pools that are never freed (NCCL may hand back a handle after its stop).
#pragma once

#include <cstdint>

#include "plugin/core/profiler_abi.h"
#include "plugin/profiler/profiler_handles.h"

namespace ncclscope::plugin::plugin_only {

// Communicators and event handles are the profiler's pools (profiler_handles.h), shared with the
// interposed mode.
inline constexpr uint32_t kMaxComms = profiler::kMaxContexts;
inline constexpr uint32_t kHandlePoolSize = profiler::kHandlePoolSize;

// The activation mask bits plugin-only recording ORs into NCCL's mask.
inline constexpr uint64_t kMaskV5 = prof_abi::kGroupApi | prof_abi::kCollApi | prof_abi::kP2pApi |
                                    prof_abi::kColl | prof_abi::kP2p | prof_abi::kKernelCh;
inline constexpr uint64_t kMaskV4 =
    prof_abi::kGroup | prof_abi::kColl | prof_abi::kP2p | prof_abi::kKernelCh;

// The profiler's init for one communicator. Returns true when this recorder took it (then
// *context is set, or null after one warning when a pool is full); false when the interposer's
// path applies (an interposed call created the runtime, or created this communicator), or when
// recording is off (then *context is null). Creates the runtime when none exists. Cold path,
// thread-safe, never throws.
bool Init(int abi, void** context, uint64_t comm_hash, int* mask, const char* comm_name, int nranks,
          int rank) noexcept;

// Whether context is one of this recorder's communicators. Thread-safe, lock-free.
bool OwnsContext(const void* context) noexcept;

// Counters for tests. Thread-safe.
struct Stats {
  uint64_t comms = 0;        // communicators recorded
  uint64_t records = 0;      // collective and send/recv records written
  uint64_t completions = 0;  // of which the device completion was stamped
  uint64_t busy_reused = 0;  // handles reused while their operation's events could still come
};
Stats GetStats() noexcept;

}  // namespace ncclscope::plugin::plugin_only
