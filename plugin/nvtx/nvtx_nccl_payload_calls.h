// The NCCL call each thread is inside, as NCCL's own NVTX range gave it (nvtx_nccl_payload.h):
// filled by the injection's push/pop callbacks of the "NCCL" domain, read by the profiler side on
// the same thread.
//
// Why the profiler can use it: NCCL 2.28.9 pushes the call's range first thing in the API function
// (src/collectives.cc, e.g. ncclAllReduce: NVTX3_FUNC_WITH_PARAMS, then ncclEnqueueCheck) and pops
// it when the function returns; its CollApi and P2pApi profiler events are started and stopped on
// the calling thread in between (src/enqueue.cc: ncclEnqueueCheck -> taskAppend ->
// collTaskAppend / p2pTaskAppend, ncclProfilerStartCollApiEvent .. ncclProfilerStopCollApiEvent).
// So while a CollApi event is open, the thread's innermost NCCL range is that call's.
#pragma once

#include <cstdint>

#include "plugin/nvtx/nvtx_nccl_payload.h"

namespace ncclscope::plugin {

// The calling thread's innermost NCCL range, when it is a call whose payload was decoded: the
// function (trace::OpType), commHash, bytes, root/peer and reduction op. False when the thread is
// in no NCCL range, the innermost one carries no call (ncclGroupEnd, ncclCommInitRank) or its
// payload was refused, or NVTX is not injected. Callers check that comm_hash (and op) are the
// ones their event describes before using the rest. Hot path: no lock, no allocation, no system
// call; noexcept.
bool CurrentNcclCallArgs(NcclCallArgs* out) noexcept;

// A range of the NCCL domain begins or ends on the calling thread (nvtx_callbacks.cpp, and the
// payload extension's nvtxRangePopPayload). Return the range's 0-based nesting level among the
// thread's NCCL ranges, as nvtxDomainRangePush/Pop do (pop: -1 when none is open). Hot path: one
// thread-local lookup each.
int NcclRangePush(const nvtxEventAttributes_t* a) noexcept;
int NcclRangePop() noexcept;

// What the decoder made of NCCL's ranges, process-wide (tests, docs' claims). Thread-safe.
struct NcclPayloadCounts {
  uint64_t decoded = 0;       // calls read (may miss a few when threads push at the same time)
  uint64_t refused = 0;       // extended payloads not laid out as 2.28.9's
  uint64_t schemas_seen = 0;  // NCCL call schemas whose registration reached the injection
  uint64_t schemas_differ = 0;
};
NcclPayloadCounts GetNcclPayloadCounts() noexcept;
// The payload extension's registrations (nvtx_nccl_payload_ext.cpp). Cold path.
void NoteNcclSchemaRegistered(bool matches) noexcept;

}  // namespace ncclscope::plugin
