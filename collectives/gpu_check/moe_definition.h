// The MoE API's definition of dispatch and combine (include/ncclscope/moe.h) computed directly from
// one run's inputs, to check the CPU twin's outputs on those very inputs: the kernels are compared
// with the twin bit for bit, and the twin follows the kernels step for step, so a mistake both
// made alike would pass that comparison; it does not pass this one. Pure; per rank, so the ranks'
// checks run in parallel.
#pragma once

#include <string>
#include <vector>

#include "collectives/gpu_check/moe_cases.h"
#include "collectives/gpu_check/moe_twin.h"

namespace ncclscope::gpu_check {

// Empty when rank r's dispatch outputs in want[r] are the definition's: its local experts' rows in
// (local expert, source rank, token, slot) order with their counts, sources and rows, each
// source's send_rows naming that row, -1 for its unused slots.
std::string DispatchAgainstDefinition(const ncclscope_moe_plan& p,
                                      const std::vector<MoeRankInput>& in,
                                      const std::vector<MoeRankOutput>& want, int r);

// Empty when rank r's combined tokens in want[r].out are the definition's: for each token, the
// float32 fused multiply-adds of weight x expert row over its used slots in slot order, rounded
// once; with combine's rank sums, per expert rank in the order of its first slot, its slots' fused
// multiply-adds rounded to the type, added in float32 and rounded again. expert_out[q]: rank q's
// expert rows, in its recv_x order.
std::string CombineAgainstDefinition(const ncclscope_moe_plan& p,
                                     const std::vector<MoeRankInput>& in,
                                     const std::vector<std::vector<unsigned char>>& expert_out,
                                     const std::vector<MoeRankOutput>& want, int r);

}  // namespace ncclscope::gpu_check
