#include "collectives/planner/planner.h"

#include <cstdio>

#include "collectives/planner/epoch.h"

namespace ncclscope::collectives {
namespace {

constexpr int32_t kNcclSum = 0;

AllReducePlan ToNccl(Fallback why) {
  AllReducePlan p;
  p.fallback = why;
  return p;
}

}  // namespace

const char* FallbackText(Fallback f) noexcept {
  switch (f) {
    case Fallback::kNone:
      return "accelerated";
    case Fallback::kDtype:
      return "data type not fp16, bf16 or fp32";
    case Fallback::kRedop:
      return "not a sum";
    case Fallback::kRanks:
      return "communicator of 1 rank or more than 8";
    case Fallback::kNotOneNode:
      return "ranks on more than one host";
    case Fallback::kNoPeerAccess:
      return "a peer's memory cannot be mapped (no NVLink or PCIe P2P)";
    case Fallback::kGpu:
      return "GPU generation without ncclscope kernels";
    case Fallback::kCapture:
      return "stream capture (CUDA graph): sent to NCCL";
    case Fallback::kAlignment:
      return "size not a multiple of 16 bytes";
    case Fallback::kEmpty:
      return "count 0";
    case Fallback::kTooLarge:
      return "larger than the tuning table's two-shot limit";
    case Fallback::kBuffer:
      return "larger than the communicator's staging buffer (NCCLSCOPE_ACCEL_BUFFER)";
    case Fallback::kDtypeUnknown:
      return "data type unknown to ncclscope (element size unknown)";
    case Fallback::kAlltoAllTooLarge:
      return "larger than the tuning table's all-to-all limit";
    case Fallback::kSeveralOnPair:
      return "more than one send to (or receive from) that peer in the group";
    case Fallback::kSelfUnpaired:
      return "a send to itself without one receive of the same size from itself";
    case Fallback::kPeer:
      return "peer outside the communicator";
  }
  return "?";
}

AllReducePlan PlanAllReduce(const AllReduceCall& call) noexcept {
  Dtype dtype;
  if (!DtypeOf(call.nccl_dtype, &dtype)) return ToNccl(Fallback::kDtype);
  if (call.nccl_redop != kNcclSum) return ToNccl(Fallback::kRedop);
  if (call.nranks < 2 || call.nranks > kMaxRanks) return ToNccl(Fallback::kRanks);
  if (!call.single_node) return ToNccl(Fallback::kNotOneNode);
  if (!call.peers_reachable) return ToNccl(Fallback::kNoPeerAccess);
  const TuningRow* row = FindTuning(call.gpu, call.nranks);
  if (row == nullptr) return ToNccl(Fallback::kGpu);
  if (call.capturing) return ToNccl(Fallback::kCapture);
  if (call.count == 0) return ToNccl(Fallback::kEmpty);
  const size_t bytes = call.count * DtypeBytes(dtype);
  if (bytes % kPackBytes != 0) return ToNccl(Fallback::kAlignment);
  if (bytes >= row->two_shot_max_bytes) return ToNccl(Fallback::kTooLarge);
  if (bytes > call.buffer_bytes) return ToNccl(Fallback::kBuffer);
  AllReducePlan p;
  p.dtype = dtype;
  p.bytes = bytes;
  p.packs = bytes / kPackBytes;
  p.row = row;
  p.blocks = row->blocks < kMaxBlocks ? row->blocks : kMaxBlocks;
  p.threads = row->threads;
  p.algorithm = bytes < row->one_shot_max_bytes ? Algorithm::kOneShot : Algorithm::kTwoShot;
  // Peers read this rank's input while it writes its output: one-shot reads during the whole
  // kernel, so an in-place call needs the input copied aside; two-shot's reads all end at its
  // middle barrier, before any output is written. An unregistered input is copied in either way.
  p.copy_in = !call.input_registered || (call.in_place && p.algorithm == Algorithm::kOneShot);
  return p;
}

void ExplainPlan(const AllReducePlan& p, const AllReduceCall& call, char* out,
                 size_t cap) noexcept {
  if (p.algorithm == Algorithm::kNccl) {
    std::snprintf(out, cap, "nccl: %s", FallbackText(p.fallback));
    return;
  }
  std::snprintf(out, cap, "%s (%s, %zu bytes, %d ranks, %ux%u%s; table row %s %d-%d ranks)",
                AlgorithmName(p.algorithm), DtypeName(p.dtype), p.bytes, call.nranks, p.blocks,
                p.threads, p.copy_in ? ", copy-in" : "", GpuClassName(p.row->gpu), p.row->min_ranks,
                p.row->max_ranks);
}

}  // namespace ncclscope::collectives
