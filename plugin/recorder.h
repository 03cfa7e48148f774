// Turns one intercepted call into a ring record.
#pragma once

#include <nccl.h>

#include "plugin/call_frame.h"
#include "plugin/comm_state.h"
#include "trace/record.h"

namespace ncclscope::plugin {

// A record with the fields every call has: op, result, times (exit = now), thread, group, flags;
// dtype/redop/peer -1. Hot path: no allocation, no system call after the thread's first call.
trace::RecordData MakeRecord(const CallFrame& f, trace::OpType op, ncclResult_t result) noexcept;

// The state of comm, or null (a non-null unknown handle is counted). Hot path.
CommState* LookupComm(const CallFrame& f, const void* comm) noexcept;

// Appends a record of a call without device work. Hot path.
void EmitHostRecord(const CallFrame& f, const trace::RecordData& d) noexcept;

// For calls that may block (creation, split, finalize, destroy, group end): OpenHostRecord appends
// d at entry marked "in call" and returns its slot; CloseHostRecord rewrites that slot with the
// final record when the call returns. Thread-safe, no allocation.
uint64_t OpenHostRecord(const CallFrame& f, trace::RecordData d) noexcept;
void CloseHostRecord(const CallFrame& f, uint64_t slot, const trace::RecordData& d) noexcept;

// Appends a collective or send/recv record and arranges its device completion: at once on its
// stream outside a group, at the outermost ncclGroupEnd inside one. Hot path.
void EmitDeviceRecord(const CallFrame& f, trace::RecordData& d, cudaStream_t stream) noexcept;

// Size in bytes of one element of dtype; 0 when unknown.
size_t DtypeSize(ncclDataType_t dtype) noexcept;

}  // namespace ncclscope::plugin
