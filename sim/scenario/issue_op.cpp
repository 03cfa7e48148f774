#include "sim/scenario/issue_op.h"

#include "sim/scenario/dtype_codec.h"
#include "sim/scenario/names.h"

namespace ncclscope::sim {
namespace {

ncclRedOp_t builtinOp(RedOp op) {
  switch (op) {
    case RedOp::kProd:
      return ncclProd;
    case RedOp::kMax:
      return ncclMax;
    case RedOp::kMin:
      return ncclMin;
    case RedOp::kAvg:
      return ncclAvg;
    default:
      return ncclSum;
  }
}

ncclResult_t issuePipeline(RankBackend& nccl, const OpCall& c, OpBuffers& b, ncclComm_t comm,
                           CUstream s) {
  ncclResult_t rc = ncclSuccess;
  if (c.grouped) rc = nccl.groupStart();
  // Ungrouped, a stage receives before it sends, so the chain drains from the first stage on
  // (exchange pairs: one side sends first, the other receives first).
  if (rc == ncclSuccess && !c.grouped && !b.send_first && b.recv_peer >= 0) {
    rc = nccl.recv(b.recv.data(), b.recv_count, c.dtype, b.recv_peer, comm, s);
  }
  if (rc == ncclSuccess && b.send_peer >= 0) {
    rc = nccl.send(b.send.data(), b.send_count, c.dtype, b.send_peer, comm, s);
  }
  if (rc == ncclSuccess && (c.grouped || b.send_first) && b.recv_peer >= 0) {
    rc = nccl.recv(b.recv.data(), b.recv_count, c.dtype, b.recv_peer, comm, s);
  }
  if (c.grouped) {
    const ncclResult_t end = nccl.groupEnd();
    if (rc == ncclSuccess) rc = end;
  }
  return rc;
}

// As torch/csrc/cuda/nccl.cpp all2all_single_unequal_split: one group; for every peer in rank
// order, itself included, a send and then a receive, each left out when its part is empty. Parts
// start at element offsets, so most are not 16-byte aligned, as in PyTorch.
ncclResult_t issueAllToAllV(RankBackend& nccl, const OpCall& c, OpBuffers& b, ncclComm_t comm,
                            CUstream s) {
  const size_t es = dtypeSize(c.dtype);
  const AlltoallvSplit& p = b.split;
  ncclResult_t rc = nccl.groupStart();
  for (size_t peer = 0; rc == ncclSuccess && peer < p.send_counts.size(); ++peer) {
    if (p.send_counts[peer] != 0) {
      rc = nccl.send(b.send.data() + p.send_offsets[peer] * es, p.send_counts[peer], c.dtype,
                     static_cast<int>(peer), comm, s);
    }
    if (rc == ncclSuccess && p.recv_counts[peer] != 0) {
      rc = nccl.recv(b.recv.data() + p.recv_offsets[peer] * es, p.recv_counts[peer], c.dtype,
                     static_cast<int>(peer), comm, s);
    }
  }
  const ncclResult_t end = nccl.groupEnd();
  return rc != ncclSuccess ? rc : end;
}

ncclResult_t issueCollective(RankBackend& nccl, const OpCall& c, OpBuffers& b, ncclRedOp_t op,
                             ncclComm_t comm, CUstream s) {
  const size_t es = dtypeSize(c.dtype);
  const void* in = b.in_place ? b.recv.data() + b.in_offset * es : b.send.data();
  void* out = b.recv.data() + b.recv_offset * es;
  switch (c.kind) {
    case OpKind::kAllReduce:
      return nccl.allReduce(in, out, c.count, c.dtype, op, comm, s);
    case OpKind::kBroadcast:
      return nccl.broadcast(in, out, c.count, c.dtype, c.root, comm, s);
    case OpKind::kReduce:
      return nccl.reduce(in, out, c.count, c.dtype, op, c.root, comm, s);
    case OpKind::kAllGather:
      return nccl.allGather(in, out, c.count, c.dtype, comm, s);
    case OpKind::kReduceScatter:
      return nccl.reduceScatter(in, out, c.count, c.dtype, op, comm, s);
    case OpKind::kAllToAll:
      return nccl.allToAll(in, out, c.count, c.dtype, comm, s);
    case OpKind::kGather:
      return nccl.gather(in, out, c.count, c.dtype, c.root, comm, s);
    case OpKind::kScatter:
      return nccl.scatter(in, out, c.count, c.dtype, c.root, comm, s);
    case OpKind::kPipeline:
    case OpKind::kAllToAllV:
    case OpKind::kCoalesced:  // the rank runner issues its collectives one by one
      break;
  }
  return ncclInvalidArgument;
}

}  // namespace

ncclResult_t issueOp(RankBackend& nccl, const OpCall& c, OpBuffers& b, ncclComm_t comm,
                     CUstream stream) {
  if (c.kind == OpKind::kPipeline) return issuePipeline(nccl, c, b, comm, stream);
  if (c.kind == OpKind::kAllToAllV) return issueAllToAllV(nccl, c, b, comm, stream);
  if (c.redop != RedOp::kPreMulSum) {
    return issueCollective(nccl, c, b, builtinOp(c.redop), comm, stream);
  }
  unsigned char scalar[8];
  encodeValue(c.scalar, c.dtype, scalar);
  ncclRedOp_t op;
  ncclResult_t rc = nccl.redOpCreatePreMulSum(&op, scalar, c.dtype, ncclScalarHostImmediate, comm);
  if (rc != ncclSuccess) return rc;
  rc = issueCollective(nccl, c, b, op, comm, stream);
  const ncclResult_t destroyed = nccl.redOpDestroy(op, comm);
  return rc != ncclSuccess ? rc : destroyed;
}

}  // namespace ncclscope::sim
