// Interposed collectives: each gets the next per-communicator sequence number.
#include <nccl.h>

#include "plugin/accel/accel_group.h"
#include "plugin/accel/accel_route.h"
#include "plugin/core/export.h"
#include "plugin/core/nccl_symbols.h"
#include "plugin/cupti/cupti_correlate.h"
#include "plugin/numerics/numerics_probe.h"
#include "plugin/runtime/recorder.h"
#include "trace/nccl_names.h"

namespace ncclscope::plugin {
namespace {

using trace::OpType;

struct CollArgs {
  OpType op;
  const void* send;
  const void* recv;
  size_t count;
  ncclDataType_t dtype;
  int redop;
  int root;
  ncclComm_t comm;
  cudaStream_t stream;
};

// AllGather and ReduceScatter are in place when one buffer is this rank's block of the other.
bool InPlace(const CollArgs& a, const CommState* cs) noexcept {
  if (a.send == a.recv) return true;
  if (cs == nullptr || (a.op != OpType::kAllGather && a.op != OpType::kReduceScatter)) return false;
  const int rank = cs->rank.load(std::memory_order_relaxed);
  const size_t block = a.count * static_cast<size_t>(trace::DataTypeSize(a.dtype));
  if (rank < 0 || block == 0) return false;
  const auto* send = static_cast<const char*>(a.send);
  const auto* recv = static_cast<const char*>(a.recv);
  return a.op == OpType::kAllGather ? send == recv + rank * block : recv == send + rank * block;
}

NumericsCall NumericsFor(const CollArgs& a, const CommState* cs) noexcept {
  NumericsCall c;
  c.op = a.op;
  c.send = a.send;
  c.recv = const_cast<void*>(a.recv);
  c.count = a.count;
  c.dtype = a.dtype;
  c.root = a.root;
  c.rank = cs->rank.load(std::memory_order_relaxed);
  c.nranks = cs->nranks.load(std::memory_order_acquire);
  c.comm_id = cs->id;
  c.stream = a.stream;
  return c;
}

template <typename Forward>
ncclResult_t Collective(const CollArgs& a, Forward&& forward) noexcept {
  CallFrame f;
  if (!BeginCall(&f)) return forward();
  CommState* cs = LookupComm(f, a.comm);
  if (cs != nullptr && cs->AbortedByWatchdog()) {
    EndCall(&f, errno);
    return kAbortedCommResult;
  }
  f.ts->call_op = static_cast<uint32_t>(a.op);
  f.ts->call_peer = -1;
  // NCCLSCOPE_NUMERICS off (the default) costs this one predicted branch; on, an unsampled call
  // adds a countdown.
  int32_t numerics_slot = -1;
  NumericsProbe* numerics = f.rt->numerics.get();
  if (__builtin_expect(numerics != nullptr, 0) && cs != nullptr && numerics->Sample(*cs, a.op)) {
    numerics_slot = numerics->Before(NumericsFor(a, cs));
  }
  // Profiler v4 only (NCCL 2.26-2.27): the call's arguments, by which its Coll event, launched
  // at a group's end or on a host-callback thread, finds its number (v4_call_log.h).
  uint64_t v4_entry = V4CallLog::kNoEntry;
  if (__builtin_expect(f.rt->v4_profiler.load(std::memory_order_relaxed), 0) && cs != nullptr) {
    v4_entry = cs->v4_calls.Add(CollectiveCallKey(a.op, a.send, a.recv, a.count, a.dtype, a.root),
                                cs->coll_seq.load(std::memory_order_relaxed) + 1);
  }
  ncclResult_t r = ncclSuccess;
  // NCCLSCOPE_ACCEL off (the default) costs this one predicted branch.
  bool accelerated = false;
  if (__builtin_expect(f.rt->config.accel, 0)) {
    // Sends and receives this group held back reach NCCL before this call does.
    FlushHeldP2p(f);
    void* recv = const_cast<void*>(a.recv);
    if (a.op == OpType::kAllReduce) {
      accelerated = RouteAllReduce(f, cs, a.comm, a.send, recv, a.count, a.dtype,
                                   static_cast<ncclRedOp_t>(a.redop), a.stream, &r);
    } else if (a.op == OpType::kAlltoAll) {
      accelerated = RouteAlltoAll(f, cs, a.comm, a.send, recv, a.count, a.dtype, a.stream, &r);
    }
  }
  if (!accelerated) r = CorrelatedCall(f, forward);
  const int err = errno;
  f.ts->call_op = 0;
  trace::RecordData d = MakeRecord(f, a.op, r);
  if (cs != nullptr) {
    d.comm_id = cs->id;
    // A rejected call enqueued nothing, so like NCCL's own counter it takes no number.
    if (r == ncclSuccess || r == ncclInProgress) {
      d.seq = cs->NextCollSeq();
    }
    // No Coll event comes for a refused call or one ncclscope's kernels ran.
    if (v4_entry != V4CallLog::kNoEntry && (accelerated || d.seq == 0)) {
      cs->v4_calls.Cancel(v4_entry);
    }
  }
  d.count = a.count;
  d.dtype = a.dtype;
  d.redop = a.redop;
  d.peer = a.root;
  if (InPlace(a, cs)) d.flags |= trace::kFlagInPlace;
  if (accelerated) d.flags |= trace::kFlagAccelerated;
  EmitDeviceRecord(f, d, a.stream);
  // After the record's completion event, so the hash does not count in the collective's time.
  if (numerics_slot >= 0) {
    numerics->After(numerics_slot, d.seq, f.ts->group_depth != 0, *f.ts);
  }
  EndCall(&f, err);
  return r;
}

}  // namespace
}  // namespace ncclscope::plugin

using ncclscope::plugin::Collective;
using ncclscope::trace::OpType;

NCCLSCOPE_API ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         cudaStream_t stream) {
  return Collective(
      {OpType::kAllReduce, sendbuff, recvbuff, count, datatype, op, -1, comm, stream},
      NCCLSCOPE_FORWARD(AllReduce, sendbuff, recvbuff, count, datatype, op, comm, stream));
}

NCCLSCOPE_API ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                         ncclDataType_t datatype, int root, ncclComm_t comm,
                                         cudaStream_t stream) {
  return Collective(
      {OpType::kBroadcast, sendbuff, recvbuff, count, datatype, -1, root, comm, stream},
      NCCLSCOPE_FORWARD(Broadcast, sendbuff, recvbuff, count, datatype, root, comm, stream));
}

NCCLSCOPE_API ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                                     ncclComm_t comm, cudaStream_t stream) {
  return Collective({OpType::kBroadcast, buff, buff, count, datatype, -1, root, comm, stream},
                    NCCLSCOPE_FORWARD(Bcast, buff, count, datatype, root, comm, stream));
}

NCCLSCOPE_API ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                      ncclDataType_t datatype, ncclRedOp_t op, int root,
                                      ncclComm_t comm, cudaStream_t stream) {
  return Collective(
      {OpType::kReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream},
      NCCLSCOPE_FORWARD(Reduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream));
}

NCCLSCOPE_API ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                         ncclDataType_t datatype, ncclComm_t comm,
                                         cudaStream_t stream) {
  return Collective(
      {OpType::kAllGather, sendbuff, recvbuff, sendcount, datatype, -1, -1, comm, stream},
      NCCLSCOPE_FORWARD(AllGather, sendbuff, recvbuff, sendcount, datatype, comm, stream));
}

NCCLSCOPE_API ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                             ncclDataType_t datatype, ncclRedOp_t op,
                                             ncclComm_t comm, cudaStream_t stream) {
  return Collective(
      {OpType::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, -1, comm, stream},
      NCCLSCOPE_FORWARD(ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, comm, stream));
}

NCCLSCOPE_API ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                        ncclDataType_t datatype, ncclComm_t comm,
                                        cudaStream_t stream) {
  return Collective({OpType::kAlltoAll, sendbuff, recvbuff, count, datatype, -1, -1, comm, stream},
                    NCCLSCOPE_FORWARD(AlltoAll, sendbuff, recvbuff, count, datatype, comm, stream));
}

NCCLSCOPE_API ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                                      ncclDataType_t datatype, int root, ncclComm_t comm,
                                      cudaStream_t stream) {
  return Collective(
      {OpType::kGather, sendbuff, recvbuff, count, datatype, -1, root, comm, stream},
      NCCLSCOPE_FORWARD(Gather, sendbuff, recvbuff, count, datatype, root, comm, stream));
}

NCCLSCOPE_API ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                                       ncclDataType_t datatype, int root, ncclComm_t comm,
                                       cudaStream_t stream) {
  return Collective(
      {OpType::kScatter, sendbuff, recvbuff, count, datatype, -1, root, comm, stream},
      NCCLSCOPE_FORWARD(Scatter, sendbuff, recvbuff, count, datatype, root, comm, stream));
}
