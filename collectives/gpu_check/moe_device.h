// One MoE case's device side in the GPU check: every simulated rank's registered buffer
// (plan.buffer_bytes, zeroed, flags set) and its inputs and outputs in device memory, the uploads,
// the launch of every rank's dispatch or combine with its outputs poisoned first (on the streams,
// events and stall records of local_ranks.h), and the downloads of what the kernels wrote.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/gpu_check/local_ranks.h"
#include "collectives/gpu_check/moe_cases.h"
#include "collectives/gpu_check/moe_twin.h"
#include "collectives/gpu_check/rank_count_run.h"
#include "collectives/include/ncclscope/moe.h"

namespace ncclscope::gpu_check {

// One rank's device memory for one case: its registered buffer, and its inputs and outputs.
struct MoeDeviceRank {
  CUdeviceptr buffer = 0;
  CUdeviceptr arena = 0;  // the rest, at the offsets below
  CUdeviceptr x = 0, topk = 0, weights = 0, recv_x = 0, recv_src = 0, recv_counts = 0,
              send_rows = 0, expert_out = 0, out = 0, status = 0;  // status: dispatch, combine
};

// A case being run: the plan every rank uses, the ranks' memory and this run's inputs.
struct MoeCaseRun {
  RankCountRun& run;
  LocalRanks& ranks;
  ncclscope_moe_plan plan;
  std::vector<MoeDeviceRank> dev;
  std::vector<MoeRankInput> in;
};

// Every rank's memory, the registered buffers zeroed with their flags as after first_epoch - 1.
// False with *error (what was allocated stays in x.dev for FreeMoeDevice).
bool AllocateMoeDevice(MoeCaseRun& x, uint32_t first_epoch, std::string* error);
void FreeMoeDevice(const Driver& cu, std::vector<MoeDeviceRank>* dev);

// The flags of every rank's registered buffer as after epoch `value`, the stall records zeroed.
bool ResetMoeFlags(const MoeCaseRun& x, uint32_t value);

// x.in's tokens, routing and weights to every rank. Empty, or what failed.
std::string UploadMoeInputs(const MoeCaseRun& x);
// Each rank's expert rows, expert_out[r]. Empty, or what failed.
std::string UploadExpertRows(const MoeCaseRun& x,
                             const std::vector<std::vector<unsigned char>>& expert_out);

// Poisons the call's outputs, zeroes the stall records, launches every rank's dispatch (or
// combine) with `epoch` but `absent`'s (-1: none), each on its stream between its events, and
// waits (local_ranks.h, LaunchRanks).
LaunchOutcome LaunchMoe(MoeCaseRun& x, bool dispatch, uint32_t epoch, uint64_t timeout_ns,
                        int absent);

// Rank r's dispatch outputs (recv_x: the received rows and one more) and status.
bool DownloadDispatch(const MoeCaseRun& x, int r, MoeRankOutput* o);
// Rank r's combine output and status.
bool DownloadCombine(const MoeCaseRun& x, int r, MoeRankOutput* o);

}  // namespace ncclscope::gpu_check
