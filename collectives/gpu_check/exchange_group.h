// The groups of sends and receives the GPU check gives the exchange kernel (kernels/exchange.cu):
// for a rank count, per pair sizes like an all-to-all(v)'s (some pairs nothing, i.e. no part;
// whole 16-byte packs; parts of one chunk and of several), each rank's operations in an order of
// its own, and every third part placed in its user buffer 2 bytes past a 16-byte boundary (an
// all-to-all(v)'s split offsets are element counts) so the kernel's byte path runs too. What each
// rank launches is what PlanExchange makes of its operations, as the interposer does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/gpu_check/cases.h"
#include "collectives/planner/exchange_plan.h"

namespace ncclscope::gpu_check {

// One rank's side of a group: its operations in call order, where each one's bytes lie in its
// sendbuff (sends) or recvbuff (receives), and how far those buffers reach.
struct ExchangeRank {
  std::vector<collectives::ExchangeOp> ops;
  std::vector<size_t> offset;  // per op, in its buffer
  size_t send_extent = 0;
  size_t recv_extent = 0;
  collectives::ExchangePlan plan;
};

struct ExchangeGroup {
  int nranks = 0;
  std::vector<std::vector<size_t>> bytes;  // [s][d]: what s sends d (0: no operation)
  std::vector<ExchangeRank> rank;
};

// The exchange cases for `nranks` on a GPU of generation `gpu` (kUnknown: sm_90's row), one per
// pattern, with `limits`' repetitions. Their bytes are fixed (at most a few MiB a rank) and not
// bounded by limits.max_bytes: a part of several chunks is what the check must reach.
std::vector<Case> BuildExchangeCases(collectives::GpuClass gpu, int nranks,
                                     const CaseLimits& limits);

// The group of a case; `seed` shuffles each rank's operations. False with *error when the planner
// leaves an operation to NCCL (the check's groups are all meant for the kernel) or refuses it.
bool BuildExchangeGroup(const Case& c, collectives::GpuClass gpu, size_t staging_bytes,
                        uint64_t seed, ExchangeGroup* g, std::string* error);

// The absent-rank group: every other rank sends `absent` two chunks' worth and receives as much
// from it, and has no other part, so every wait that can expire is one for `absent`.
bool BuildAbsentExchangeGroup(collectives::GpuClass gpu, int nranks, int absent,
                              size_t staging_bytes, ExchangeGroup* g, std::string* error);

// Bytes each rank's input, output and staging need for every group of `nranks`.
size_t ExchangeBytesNeeded(collectives::GpuClass gpu, int nranks);

}  // namespace ncclscope::gpu_check
