// Turns one intercepted call into a ring record.
#pragma once

#include <nccl.h>

#include "plugin/core/probe_clock.h"
#include "plugin/nvtx/nvtx_contexts.h"
#include "plugin/runtime/call_frame.h"
#include "plugin/runtime/comm_state.h"
#include "trace/record.h"
#include "trace/ring_writer.h"

namespace ncclscope::plugin {

// A record with the fields every call has: op, result, times (exit = now), thread, group, flags;
// dtype/redop/peer -1. Hot path: no allocation, no system call after the thread's first call.
// Inline, so the record can stay in registers until it is stored into its ring slot.
inline trace::RecordData MakeRecord(const CallFrame& f, trace::OpType op,
                                    ncclResult_t result) noexcept {
  ThreadState& ts = *f.ts;
  trace::RecordData d{};
  d.op = static_cast<uint32_t>(op);
  d.result = static_cast<int32_t>(result);
  d.t_enter_ns = f.t_enter;
  d.t_exit_ns = ProbeNowNs();
  d.t_device_done_ns = trace::kDoneUntracked;
  d.dtype = -1;
  d.redop = -1;
  d.peer = -1;
  d.tid = CachedTid(ts);
  d.group_id = ts.group_id;
  d.flags = ts.group_depth != 0 ? trace::kFlagInGroup : 0;
  d.reserved = NvtxContextWord(*f.rt->ring);  // the step and phase the thread is in (NVTX)
  return d;
}

// The state of comm, or null (a non-null unknown handle is counted). Hot path.
inline CommState* LookupComm(const CallFrame& f, const void* comm) noexcept {
  CommState* cs = f.rt->comms.Find(comm);
  // A null handle is the caller's error (NCCL rejects it), not a communicator we missed.
  if (__builtin_expect(cs == nullptr && comm != nullptr, 0)) f.rt->ring->CountUnknownCommRecord();
  return cs;
}

// What a call on a communicator the watchdog aborted returns instead of reaching NCCL, which freed
// it: the error NCCL reports when a peer failed, so the application's error handling (PyTorch's
// ProcessGroupNCCL, an elastic launcher) ends the job at once.
inline constexpr ncclResult_t kAbortedCommResult = ncclRemoteError;

// Appends a record of a call without device work. Hot path.
void EmitHostRecord(const CallFrame& f, const trace::RecordData& d) noexcept;

// For calls that may block (creation, split, finalize, destroy, group end): OpenHostRecord appends
// d at entry marked "in call" and returns its slot; CloseHostRecord rewrites that slot with the
// final record when the call returns. Thread-safe, no allocation.
uint64_t OpenHostRecord(const CallFrame& f, trace::RecordData d) noexcept;
void CloseHostRecord(const CallFrame& f, uint64_t slot, const trace::RecordData& d) noexcept;

// EmitDeviceRecord's path when completion tracking is on.
void EmitTrackedDeviceRecord(const CallFrame& f, trace::RecordData& d,
                             cudaStream_t stream) noexcept;

// Appends a collective or send/recv record and arranges its device completion: at once on its
// stream outside a group, at the outermost ncclGroupEnd inside one. Hot path; inline for the
// untracked case, which is only a ring append.
inline void EmitDeviceRecord(const CallFrame& f, trace::RecordData& d,
                             cudaStream_t stream) noexcept {
  d.stream = reinterpret_cast<uintptr_t>(stream);
  if (f.rt->tracker == nullptr) {
    f.rt->ring->Append(d, false);
    return;
  }
  EmitTrackedDeviceRecord(f, d, stream);
}

}  // namespace ncclscope::plugin
