// What the GPU check runs: for a rank count, every size class of the tuning table (the edges of
// one-shot and two-shot for fp32/fp16/bf16, all-to-all's smallest, odd and largest sizes), each
// with the algorithm the planner picks and, for small sizes, the other one too (a kernel must be
// right whatever the table says), and how many repetitions each gets. The exchange kernel's groups
// (grouped sends and receives) are built in exchange_group.h and the MoE dispatch/combine shapes in
// moe_cases.h; both are reported as cases too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/planner/tuning_table.h"
#include "collectives/types/accel_types.h"

namespace ncclscope::gpu_check {

enum class Op : uint8_t { kAllReduce, kAlltoAll, kExchange, kMoeDispatch, kMoeCombine };

// The exchange's groups (exchange_group.h): pipeline stages (rank r to r + 1, several chunks), an
// all-to-all(v) of parts up to one chunk, one of parts up to several chunks.
enum class ExchangePattern : uint8_t { kPipeline, kSmall, kLarge };

// How a MoE case's tokens are routed (moe_cases.h).
enum class MoeRouting : uint8_t {
  kUniform,   // every slot an expert drawn uniformly (a token may pick one twice), some -1
  kSkewed,    // half of the slots to expert 0 (rank 0's), the rest uniform, some -1
  kDistinct,  // top-k distinct experts per token, as a router's top-k gives them
};

// A MoE dispatch/combine shape (include/ncclscope/moe.h's config) and its tokens.
struct MoeShape {
  int hidden = 0;
  int top_k = 0;
  int num_experts = 0;
  int max_tokens = 0;
  int recv_capacity = 0;  // 0: the worst case
  MoeRouting routing = MoeRouting::kUniform;
  int unused_pct = 0;       // slots left -1
  bool all_tokens = false;  // every rank max_tokens; else each a random count, rank 1 none
  int combine = 0;          // ncclscope_moe_combine_mode: 0 exact, 1 rank sums ("sums")
  double device_bytes = 0;  // all ranks' device reads + writes per call / nranks (report)
};

struct Case {
  Op op = Op::kAllReduce;
  collectives::Algorithm algorithm = collectives::Algorithm::kOneShot;  // or kTwoShot, kPull
  collectives::Dtype dtype = collectives::Dtype::kFp32;                 // AllReduce only
  int nranks = 0;
  // AllReduce: the buffer; AlltoAll: a rank's whole sendbuff; exchange: what a rank sends, the
  // average over ranks.
  size_t bytes = 0;
  uint64_t packs = 0;   // AllReduce: bytes / 16; AlltoAll: packs per peer
  uint32_t blocks = 0;  // the table's launch (the single-device run may lower it: co-residency);
                        // exchange: blocks per part

  uint32_t threads = 0;
  bool planned = true;  // the planner's choice for this call; false: the other algorithm, forced
  int reps = 0;
  ExchangePattern pattern = ExchangePattern::kPipeline;  // exchange only
  MoeShape moe{};  // MoE only; its `bytes` are the logical bytes DeepEP counts (moe_cases.h)
};

struct CaseLimits {
  size_t max_bytes = 64u << 20;       // larger sizes are left out
  size_t force_other_max = 1u << 20;  // up to here the other AllReduce algorithm runs too
  size_t big_bytes = 1u << 20;        // above this a case gets big_reps instead of reps
  int reps = 20;
  int big_reps = 3;
};

// Every case for `nranks` on a GPU of generation `gpu` (the table's rows; kUnknown: sm_90's).
std::vector<Case> BuildCases(collectives::GpuClass gpu, int nranks, const CaseLimits& limits);

// The kernel's name in the fatbin (collectives/*_kernel_args.h).
const char* KernelName(const Case& c);

// "allreduce two-shot bf16" / "alltoall pull" / "exchange a2av chunks" /
// "moe combine bf16 h7168 k8 t128".
std::string CaseName(const Case& c);

// Bytes one rank reads and writes in device memory for one call (copy-in included), for the
// bandwidth column: one-shot (n + 3) S, two-shot 5 S + S / n, pull 4 S, exchange 4 S (the sender
// reads its sendbuff and writes its staging, the receiver reads that and writes its recvbuff); MoE
// what the routing made it (moe.device_bytes).
double BytesMovedPerRank(const Case& c);

}  // namespace ncclscope::gpu_check
