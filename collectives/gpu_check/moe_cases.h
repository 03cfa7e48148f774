// What the GPU check gives the MoE dispatch and combine kernels (kernels/moe.cu, the C API in
// include/ncclscope/moe.h): the shapes for a rank count, each rank's fresh random tokens, routing
// and weights for one run, the deterministic "expert" applied between dispatch and combine, and the
// bytes a run moves as DeepEP counts them (for the timings of part (c)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/gpu_check/cases.h"
#include "collectives/include/ncclscope/moe.h"
#include "collectives/moe/moe_elements.h"

namespace ncclscope::gpu_check {

// The DeepSeek-V3 shape DeepEP's README benchmarks (deepseek-ai/DeepEP): hidden 7168, top-8 of
// 256 experts (256 rounded down to a multiple of the ranks), with the low-latency mode's 128
// tokens per rank and a high-throughput batch of 4096.
inline constexpr int kDeepSeekHidden = 7168;
inline constexpr int kDeepSeekTopK = 8;
inline constexpr int kDeepSeekExperts = 256;
inline constexpr int kLowLatencyTokens = 128;
inline constexpr int kHighThroughputTokens = 4096;

// The MoE cases for `nranks` (op kMoeDispatch; each run is a dispatch and its combine), those
// whose token rows (max_tokens x hidden x element bytes a rank) fit limits.max_bytes:
// hidden 128 top-1 and skewed top-8 for fp32, fp16 and bf16 (a rank without tokens, unused
// slots); hidden 7168 top-8 with 16 tokens for each type; the 128-token low-latency shape in
// bf16; with `largest` (the largest rank count of the run) the 4096-token shape in bf16 with
// big_reps runs. The skewed top-8 and the 128- and 4096-token shapes also run with combine's rank
// sums. The others get limits.reps runs.
std::vector<Case> BuildMoeCases(int nranks, bool largest, const CaseLimits& limits);

// The C API's configuration of a case with `blocks` per rank (0: the plan's default).
ncclscope_moe_config MoeConfig(const Case& c, int blocks);

// One rank's side of one run.
struct MoeRankInput {
  int32_t tokens = 0;
  std::vector<unsigned char> x;  // [tokens][hidden]
  std::vector<int32_t> topk;     // [tokens][top_k]
  std::vector<float> weights;    // [tokens][top_k]
};

// Rank `rank`'s tokens for run `rep` of case number `case_index`: finite values of every sign and
// a range of exponents (any sum of top_k weighted expert rows stays finite in fp16), weights in
// [-1, 1), routing as c.moe says. The same arguments give the same input.
MoeRankInput MakeMoeInput(const Case& c, uint64_t seed, size_t case_index, int rep, int rank);

// The experts: rank `rank` turns each received row of its local expert e into
// x * (1 + e mod 4 / 4) - 1/8, rounded to the data type, so combine sees rows that differ from
// what dispatch moved and differ between experts. `recv_x` holds sum(recv_counts) rows.
void ApplyExperts(const ncclscope_moe_plan& plan, const unsigned char* recv_x,
                  const int32_t* recv_counts, unsigned char* expert_out);

// Rows are read and written as the twin does (collectives/moe/moe_elements.h).
using collectives::LoadMoeElement;
using collectives::StoreMoeElement;

// What one run moves, per rank on average, from every rank's routing.
struct MoeTraffic {
  // DeepEP's logical bytes (ep-kernels.md section 1: dispatch counts recv_x.numel() x element
  // bytes, one row per (token, destination rank) including the rank's own tokens; combine counts
  // the same bytes sent back).
  double logical = 0;
  // Device reads + writes of the kernels: dispatch copies its tokens in (2 T), reads each row
  // once per destination rank (U) and writes every routed entry (E); combine copies its expert
  // rows in (2 E), reads one row per used slot of its tokens (E) and writes its tokens (T); its
  // rank sums read the expert rows in place (E), write and read one sum per pair (2 U) and write
  // the tokens (T).
  double dispatch_device = 0, combine_device = 0;
};
MoeTraffic CountTraffic(const Case& c, const std::vector<MoeRankInput>& in);

}  // namespace ncclscope::gpu_check
