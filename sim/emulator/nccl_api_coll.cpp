// Exported collective and point-to-point entry points: validate, record, return at once. Each
// brackets itself with NCCL's NVTX range, pushed before any check as in NCCL (nvtx_ranges.h).
#include <cstring>
#include <mutex>

#include "sim/emulator/api_support.h"
#include "sim/emulator/group.h"
#include "sim/emulator/nvtx_ranges.h"
#include "sim/emulator/op_desc.h"
#include "sim/emulator/output_faults.h"

using ncclsim::failWith;
using ncclsim::NvtxApiRange;
using ncclsim::NvtxCall;
using ncclsim::OpDesc;
using ncclsim::OpKind;
using ncclsim::RedKind;

namespace {

// Resolves op into desc (built-in or PreMulSum created on this comm for this dtype).
ncclResult_t resolveRedOp(ncclRedOp_t op, OpDesc* desc) {
  if (int(op) >= 0 && int(op) < int(ncclNumOps)) {
    desc->red = static_cast<RedKind>(int(op));
    return ncclSuccess;
  }
  ncclComm* c = desc->comm;
  std::lock_guard<std::mutex> lock(c->issue_mu);
  size_t idx = size_t(int(op) - int(ncclNumOps));
  if (int(op) < int(ncclNumOps) || idx >= c->redops.size() || !c->redops[idx].live) {
    return failWith(ncclInvalidArgument, "invalid reduction operator %d", int(op));
  }
  const ncclsim::CustomRedOp& r = c->redops[idx];
  if (r.dtype != desc->dtype) {
    return failWith(ncclInvalidArgument, "reduction operator %d was created for another datatype",
                    int(op));
  }
  desc->red = RedKind::kPreMulSum;
  std::memcpy(desc->scalar, r.scalar, sizeof(desc->scalar));
  desc->scalar_ptr = r.device_scalar ? r.scalar_ptr : nullptr;
  return ncclSuccess;
}

ncclResult_t submit(OpKind kind, const void* send, void* recv, size_t count, ncclDataType_t dtype,
                    int root, ncclRedOp_t op, bool reduces, ncclComm_t comm, cudaStream_t stream) {
  if (comm == nullptr) return failWith(ncclInvalidArgument, "communicator is NULL");
  if (comm->destroyed.load() || ncclsim::commStopped(comm)) {
    return failWith(ncclInvalidUsage, "communicator was destroyed, aborted or revoked");
  }
  if (ncclsim::dtypeSize(dtype) == 0) {
    return failWith(ncclInvalidArgument, "invalid datatype %d", int(dtype));
  }
  if (root < 0 || root >= comm->nranks) {
    return failWith(ncclInvalidArgument, "root/peer %d out of range [0, %d)", root, comm->nranks);
  }
  OpDesc d;
  d.kind = kind;
  d.send = send;
  d.recv = recv;
  d.count = count;
  d.dtype = dtype;
  d.root = root;
  d.comm = comm;
  d.stream = reinterpret_cast<CUstream>(stream);
  if (reduces) {
    ncclResult_t r = resolveRedOp(op, &d);
    if (r != ncclSuccess) return r;
  }
  // NCCL returns at once for empty operations, without synchronizing with peers.
  if (count == 0) return ncclSuccess;
  if (kind != OpKind::kSend && kind != OpKind::kRecv) d.flip_bit = ncclsim::takeArmedOutputFlip();
  ncclsim::submitOp(d);
  return ncclSuccess;
}

}  // namespace

extern "C" {

ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                            cudaStream_t stream) {
  const NvtxApiRange range(NvtxCall::kAllReduce, comm, count, datatype, 0, op);
  return submit(OpKind::kAllReduce, sendbuff, recvbuff, count, datatype, 0, op, true, comm, stream);
}

ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                         cudaStream_t stream) {
  const NvtxApiRange range(NvtxCall::kReduce, comm, count, datatype, root, op);
  return submit(OpKind::kReduce, sendbuff, recvbuff, count, datatype, root, op, true, comm, stream);
}

ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                cudaStream_t stream) {
  const NvtxApiRange range(NvtxCall::kReduceScatter, comm, recvcount, datatype, 0, op);
  return submit(OpKind::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, 0, op, true, comm,
                stream);
}

ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, int root, ncclComm_t comm,
                            cudaStream_t stream) {
  const NvtxApiRange range(NvtxCall::kBroadcast, comm, count, datatype, root, ncclSum);
  return submit(OpKind::kBroadcast, sendbuff, recvbuff, count, datatype, root, ncclSum, false, comm,
                stream);
}

ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  return pncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                            ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  const NvtxApiRange range(NvtxCall::kAllGather, comm, sendcount, datatype, 0, ncclSum);
  return submit(OpKind::kAllGather, sendbuff, recvbuff, sendcount, datatype, 0, ncclSum, false,
                comm, stream);
}

ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  const NvtxApiRange range(NvtxCall::kAlltoAll, comm, count, datatype, 0, ncclSum);
  return submit(OpKind::kAlltoAll, sendbuff, recvbuff, count, datatype, 0, ncclSum, false, comm,
                stream);
}

ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  const NvtxApiRange range(NvtxCall::kGather, comm, count, datatype, root, ncclSum);
  return submit(OpKind::kGather, sendbuff, recvbuff, count, datatype, root, ncclSum, false, comm,
                stream);
}

ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  const NvtxApiRange range(NvtxCall::kScatter, comm, count, datatype, root, ncclSum);
  return submit(OpKind::kScatter, sendbuff, recvbuff, count, datatype, root, ncclSum, false, comm,
                stream);
}

ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream) {
  const NvtxApiRange range(NvtxCall::kSend, comm, count, datatype, peer, ncclSum);
  return submit(OpKind::kSend, sendbuff, nullptr, count, datatype, peer, ncclSum, false, comm,
                stream);
}

ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream) {
  const NvtxApiRange range(NvtxCall::kRecv, comm, count, datatype, peer, ncclSum);
  return submit(OpKind::kRecv, nullptr, recvbuff, count, datatype, peer, ncclSum, false, comm,
                stream);
}

}  // extern "C"

NCCLSIM_ALIAS(ncclAllReduce)
NCCLSIM_ALIAS(ncclReduce)
NCCLSIM_ALIAS(ncclReduceScatter)
NCCLSIM_ALIAS(ncclBroadcast)
NCCLSIM_ALIAS(ncclBcast)
NCCLSIM_ALIAS(ncclAllGather)
NCCLSIM_ALIAS(ncclAlltoAll)
NCCLSIM_ALIAS(ncclGather)
NCCLSIM_ALIAS(ncclScatter)
NCCLSIM_ALIAS(ncclSend)
NCCLSIM_ALIAS(ncclRecv)
