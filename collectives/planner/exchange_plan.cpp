#include "collectives/planner/exchange_plan.h"

#include <cstdio>

namespace ncclscope::collectives {
namespace {

// Operations of the call with this peer and direction, and the last one's index.
size_t CountOnPair(const ExchangeCall& call, int peer, bool send, size_t* last) {
  size_t n = 0;
  for (size_t j = 0; j < call.nops; ++j) {
    if (call.ops[j].peer == peer && call.ops[j].send == send) {
      ++n;
      *last = j;
    }
  }
  return n;
}

// What both ranks of a pair know of op i: where it goes, its size, how many share its pair.
Fallback PairFallback(const ExchangeCall& call, size_t i) {
  const ExchangeOp& op = call.ops[i];
  if (op.peer < 0 || op.peer >= call.nranks) return Fallback::kPeer;
  if (op.bytes == 0) return Fallback::kEmpty;
  if (op.bytes % kPackBytes != 0) return Fallback::kAlignment;
  size_t last = 0;
  if (CountOnPair(call, op.peer, op.send, &last) != 1) return Fallback::kSeveralOnPair;
  return Fallback::kNone;
}

Fallback CommFallback(const ExchangeCall& call, const ExchangeTuningRow** row) {
  if (call.nranks < 2 || call.nranks > kMaxRanks) return Fallback::kRanks;
  if (!call.single_node) return Fallback::kNotOneNode;
  if (!call.peers_reachable) return Fallback::kNoPeerAccess;
  *row = FindExchangeTuning(call.gpu, call.nranks);
  if (*row == nullptr) return Fallback::kGpu;
  if (call.capturing) return Fallback::kCapture;
  if (call.buffer_bytes / static_cast<size_t>(call.nranks) <
      kExchangeSlotsPerPeer * (*row)->chunk_bytes) {
    return Fallback::kBuffer;
  }
  return Fallback::kNone;
}

}  // namespace

Fallback ExchangeOpFallback(const ExchangeCall& call, size_t i) noexcept {
  if (i >= call.nops) return Fallback::kPeer;
  const Fallback own = PairFallback(call, i);
  if (own != Fallback::kNone || call.ops[i].peer != call.rank) return own;
  // To itself: the send and the receive are one copy, both here or both at NCCL.
  size_t other = 0;
  if (CountOnPair(call, call.rank, !call.ops[i].send, &other) != 1 ||
      PairFallback(call, other) != Fallback::kNone || call.ops[other].bytes != call.ops[i].bytes) {
    return Fallback::kSelfUnpaired;
  }
  return Fallback::kNone;
}

ExchangePlan PlanExchange(const ExchangeCall& call) noexcept {
  ExchangePlan p;
  p.fallback = CommFallback(call, &p.row);
  if (p.fallback != Fallback::kNone) return p;
  // At most one send and one receive per peer pass ExchangeOpFallback: never more parts than fit.
  for (size_t i = 0; i < call.nops && p.nparts < kMaxExchangeParts; ++i) {
    if (ExchangeOpFallback(call, i) == Fallback::kNone) {
      p.part_op[p.nparts++] = static_cast<uint32_t>(i);
    }
  }
  if (p.nparts == 0) {
    p.fallback = call.nops == 0 ? Fallback::kEmpty : ExchangeOpFallback(call, 0);
    return p;
  }
  p.algorithm = Algorithm::kExchange;
  p.blocks_per_part = p.row->blocks_per_part;
  p.threads = p.row->threads;
  p.slot_bytes = p.row->chunk_bytes;
  p.sub_bytes = p.row->chunk_bytes / p.row->blocks_per_part;
  return p;
}

uint64_t ExchangeChunks(const ExchangePlan& plan, size_t bytes) noexcept {
  if (plan.slot_bytes == 0) return 0;
  return (bytes + plan.slot_bytes - 1) / plan.slot_bytes;
}

void ExplainExchangePlan(const ExchangePlan& p, const ExchangeCall& call, char* out,
                         size_t cap) noexcept {
  if (cap == 0) return;
  if (p.algorithm == Algorithm::kNccl || p.row == nullptr) {
    std::snprintf(out, cap, "nccl: %s", FallbackText(p.fallback));
    return;
  }
  std::snprintf(out, cap,
                "%s (%u of %zu parts, %ux%u a part, %zu-byte chunks; table row %s %d-%d ranks)",
                AlgorithmName(p.algorithm), p.nparts, call.nops, p.blocks_per_part, p.threads,
                p.slot_bytes, GpuClassName(p.row->gpu), p.row->min_ranks, p.row->max_ranks);
}

}  // namespace ncclscope::collectives
