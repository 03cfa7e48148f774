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

// One rank on its own, as a process of part (b) holds it (moe_ipc.h), and as (a) uses it per rank:
// its registered buffer zeroed with its flags as after first_epoch - 1, and its arena. False with
// *error (what was allocated stays in *m for FreeMoeRank).
bool AllocateMoeRank(const Driver& cu, const ncclscope_moe_plan& p, uint32_t first_epoch,
                     MoeDeviceRank* m, std::string* error);
void FreeMoeRank(const Driver& cu, MoeDeviceRank* m);
// The rank's tokens, routing and weights. Empty, or what failed.
std::string UploadMoeRankInput(const Driver& cu, const MoeDeviceRank& m, const MoeRankInput& in);
// The rank's expert rows (the experts' outputs for its received rows).
bool UploadMoeRankExpertRows(const Driver& cu, const MoeDeviceRank& m,
                             const std::vector<unsigned char>& rows);
// Poisons the outputs of the rank's next dispatch (or combine) and that call's status.
CUresult PoisonMoeOutputs(const Driver& cu, const ncclscope_moe_plan& p, const MoeDeviceRank& m,
                          bool dispatch);
// The by-value parameter of the rank's dispatch or combine over its own memory.
ncclscope_moe_dispatch_args MoeDispatchArgs(const ncclscope_moe_common_args& common,
                                            const MoeDeviceRank& m);
ncclscope_moe_combine_args MoeCombineArgs(const ncclscope_moe_common_args& common,
                                          const MoeDeviceRank& m);
// What the rank's dispatch wrote (`entries`: its tokens x top_k) and its status; recv_x's
// received rows and one more.
bool DownloadMoeDispatch(const Driver& cu, const ncclscope_moe_plan& p, const MoeDeviceRank& m,
                         size_t entries, MoeRankOutput* o);
// What its combine wrote (`out_bytes`: its tokens x row bytes) and its status.
bool DownloadMoeCombine(const Driver& cu, const MoeDeviceRank& m, size_t out_bytes,
                        MoeRankOutput* o);

// A case being run: the plan every rank uses, the ranks' memory and this run's inputs.
struct MoeCaseRun {
  RankCountRun& run;
  LocalRanks& ranks;
  ncclscope_moe_plan plan;
  std::vector<MoeDeviceRank> dev;
  std::vector<MoeRankInput> in;
  // Launches ask for NCCLSCOPE_MOE_DEVICE_EPOCH (their epoch argument is not passed): the
  // kernels must count on from what their buffer holds, as under CUDA-graph replay.
  bool device_epoch = false;
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

// Rank r's common arguments for a call with `epoch` (or NCCLSCOPE_MOE_DEVICE_EPOCH,
// x.device_epoch): every rank's buffer, its stall record, its tokens (the status is set by
// MoeDispatchArgs / MoeCombineArgs).
ncclscope_moe_common_args MoeCommonArgs(const MoeCaseRun& x, int r, uint32_t epoch,
                                        uint64_t timeout_ns);

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
