#include "collectives/planner/alltoall_plan.h"

#include <cstdio>

#include "collectives/planner/epoch.h"

namespace ncclscope::collectives {
namespace {

AlltoAllPlan ToNccl(Fallback why) {
  AlltoAllPlan p;
  p.fallback = why;
  return p;
}

}  // namespace

size_t NcclTypeBytes(int32_t nccl_dtype) noexcept {
  switch (nccl_dtype) {
    case 0:   // ncclInt8
    case 1:   // ncclUint8
    case 10:  // ncclFloat8e4m3
    case 11:  // ncclFloat8e5m2
      return 1;
    case 6:  // ncclFloat16
    case 9:  // ncclBfloat16
      return 2;
    case 2:  // ncclInt32
    case 3:  // ncclUint32
    case 7:  // ncclFloat32
      return 4;
    case 4:  // ncclInt64
    case 5:  // ncclUint64
    case 8:  // ncclFloat64
      return 8;
    default:
      return 0;
  }
}

AlltoAllPlan PlanAlltoAll(const AlltoAllCall& call) noexcept {
  const size_t element = NcclTypeBytes(call.nccl_dtype);
  if (element == 0) return ToNccl(Fallback::kDtypeUnknown);
  if (call.nranks < 2 || call.nranks > kMaxRanks) return ToNccl(Fallback::kRanks);
  if (!call.single_node) return ToNccl(Fallback::kNotOneNode);
  if (!call.peers_reachable) return ToNccl(Fallback::kNoPeerAccess);
  const AlltoAllTuningRow* row = FindAlltoAllTuning(call.gpu, call.nranks);
  if (row == nullptr) return ToNccl(Fallback::kGpu);
  if (call.capturing) return ToNccl(Fallback::kCapture);
  if (call.count == 0) return ToNccl(Fallback::kEmpty);
  const size_t ranks = static_cast<size_t>(call.nranks);
  // A count whose byte size does not fit a size_t is past any limit (and must not wrap into one).
  if (call.count > SIZE_MAX / element / ranks) return ToNccl(Fallback::kAlltoAllTooLarge);
  const size_t per_peer = call.count * element;
  // Each peer's block must be whole packs: block j starts at j x per_peer in both buffers.
  if (per_peer % kPackBytes != 0) return ToNccl(Fallback::kAlignment);
  const size_t bytes = per_peer * ranks;
  if (bytes >= row->max_bytes) return ToNccl(Fallback::kAlltoAllTooLarge);
  if (bytes > call.buffer_bytes) return ToNccl(Fallback::kBuffer);
  AlltoAllPlan p;
  p.algorithm = Algorithm::kPull;
  p.element_bytes = element;
  p.bytes = bytes;
  p.packs_per_peer = per_peer / kPackBytes;
  p.row = row;
  p.blocks = row->blocks < kMaxBlocks ? row->blocks : kMaxBlocks;
  p.threads = row->threads;
  // Peers read this rank's input during the whole kernel. In place, this rank writes block j of
  // its buffer (rank j's block for it) while rank j still reads block j (this rank's block for
  // rank j): the input must be copied aside. Unregistered, peers cannot read it at all.
  p.copy_in = !call.input_registered || call.in_place;
  return p;
}

void ExplainAlltoAllPlan(const AlltoAllPlan& p, const AlltoAllCall& call, char* out,
                         size_t cap) noexcept {
  if (p.algorithm == Algorithm::kNccl) {
    std::snprintf(out, cap, "nccl: %s", FallbackText(p.fallback));
    return;
  }
  std::snprintf(out, cap,
                "%s (%d ranks x %zu bytes, %zu-byte elements, %ux%u%s; table row %s %d-%d ranks)",
                AlgorithmName(p.algorithm), call.nranks, p.packs_per_peer * kPackBytes,
                p.element_bytes, p.blocks, p.threads, p.copy_in ? ", copy-in" : "",
                GpuClassName(p.row->gpu), p.row->min_ranks, p.row->max_ranks);
}

}  // namespace ncclscope::collectives
