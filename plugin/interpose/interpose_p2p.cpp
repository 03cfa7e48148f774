// Interposed send/recv: rank A's k-th send to B and B's k-th recv from A get the same number k,
// from per-(communicator, peer) counters kept separately for each direction.
#include <nccl.h>

#include "plugin/accel/accel_group.h"
#include "plugin/core/export.h"
#include "plugin/core/nccl_symbols.h"
#include "plugin/cupti/cupti_correlate.h"
#include "plugin/runtime/recorder.h"

namespace ncclscope::plugin {
namespace {

template <typename Forward>
ncclResult_t PointToPoint(bool send, void* buffer, size_t count, ncclDataType_t dtype, int peer,
                          ncclComm_t comm, cudaStream_t stream, Forward&& forward) noexcept {
  CallFrame f;
  if (!BeginCall(&f)) return forward();
  CommState* cs = LookupComm(f, comm);
  if (cs != nullptr && cs->AbortedByWatchdog()) {
    EndCall(&f, errno);
    return kAbortedCommResult;
  }
  const auto op = send ? trace::OpType::kSend : trace::OpType::kRecv;
  // NCCLSCOPE_ACCEL off (the default) costs this one predicted branch.
  if (__builtin_expect(f.rt->config.accel, 0) &&
      HoldP2p(f, cs, comm, send, buffer, count, dtype, peer, stream,
              MakeRecord(f, op, ncclSuccess))) {
    EndCall(&f, errno);
    return ncclSuccess;
  }
  f.ts->call_op = static_cast<uint32_t>(op);
  f.ts->call_peer = peer;
  // Profiler v4 only: the arguments by which its P2p event, launched at the group's end, finds
  // the number (v4_call_log.h).
  uint64_t v4_entry = V4CallLog::kNoEntry;
  if (__builtin_expect(f.rt->v4_profiler.load(std::memory_order_relaxed), 0) && cs != nullptr) {
    const uint64_t next = cs->PeekP2PSeq(send, peer);
    if (next != 0) v4_entry = cs->v4_calls.Add(P2pCallKey(send, buffer, count, dtype, peer), next);
  }
  const ncclResult_t r = CorrelatedCall(f, forward);
  const int err = errno;
  f.ts->call_op = 0;
  trace::RecordData d = MakeRecord(f, op, r);
  if (cs != nullptr) {
    d.comm_id = cs->id;
    if (r == ncclSuccess || r == ncclInProgress) d.seq = cs->NextP2PSeq(send, peer);
    if (v4_entry != V4CallLog::kNoEntry && d.seq == 0) cs->v4_calls.Cancel(v4_entry);
  }
  d.count = count;
  d.dtype = dtype;
  d.peer = peer;
  EmitDeviceRecord(f, d, stream);
  EndCall(&f, err);
  return r;
}

}  // namespace
}  // namespace ncclscope::plugin

using ncclscope::plugin::PointToPoint;

NCCLSCOPE_API ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype,
                                    int peer, ncclComm_t comm, cudaStream_t stream) {
  return PointToPoint(true, const_cast<void*>(sendbuff), count, datatype, peer, comm, stream,
                      NCCLSCOPE_FORWARD(Send, sendbuff, count, datatype, peer, comm, stream));
}

NCCLSCOPE_API ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                    ncclComm_t comm, cudaStream_t stream) {
  return PointToPoint(false, recvbuff, count, datatype, peer, comm, stream,
                      NCCLSCOPE_FORWARD(Recv, recvbuff, count, datatype, peer, comm, stream));
}
