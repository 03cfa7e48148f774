// Part (a) of the GPU check for the MoE kernels under CUDA graphs (include/ncclscope/moe.h,
// NCCLSCOPE_MOE_DEVICE_EPOCH): every simulated rank's dispatch and combine captured once into a
// graph on its own stream, then the graphs replayed run after run with fresh inputs of the same
// token counts, the kernels counting their epochs on from their buffers across the wrap; every
// output compared bit for bit with the CPU twins run with device epochs. Skipped, with a note,
// when the driver has no stream capture (the emulator).
#pragma once

#include "collectives/gpu_check/cases.h"
#include "collectives/gpu_check/local_ranks.h"
#include "collectives/gpu_check/rank_count_run.h"

namespace ncclscope::gpu_check {

// Runs `c` (its token counts fixed: every rank max_tokens) `runs` times through the graphs, with
// `blocks` a rank (0: the plan's). Adds one note to the summary and counts failures in
// run.failures. False on a hang (the device must not be touched again).
bool CheckMoeGraphReplay(RankCountRun& run, LocalRanks& ranks, Case c, int blocks, int runs);

}  // namespace ncclscope::gpu_check
