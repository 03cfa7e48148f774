// The MoE dispatch and combine kernels (kernels/moe.cu, include/ncclscope/moe.h) in parts (a) and
// (c) of the GPU check, for one rank count: every case of moe_cases.h on the simulated ranks of
// one device, each rank its own registered buffer of plan.buffer_bytes and its outputs in device
// memory, all ranks' grids co-resident (blocks lowered where the device holds fewer). Each run:
// fresh inputs, outputs poisoned, dispatch, the experts on the host, combine; every output
// (recv_x, recv_src, recv_counts, send_rows, out, both statuses) compared bit for bit with the CPU
// twins (moe_twin.h), whose outputs are checked against the API's definition (moe_definition.h). A
// case's flags start just below 2^32, so its epochs wrap halfway; every other run asks for
// NCCLSCOPE_MOE_DEVICE_EPOCH, as a CUDA graph's replays would. Then a rank that never launches
// its dispatch: every other rank must end with NCCLSCOPE_MOE_TIMEOUT and a stall naming it. Kernel
// times go into the summary's rows beside the bytes DeepEP counts.
#pragma once

#include "collectives/gpu_check/local_ranks.h"
#include "collectives/gpu_check/rank_count_run.h"

namespace ncclscope::gpu_check {

// Runs the cases on `ranks`' streams, events and stall records (its buffers are not used; the
// stall records are left zeroed), adding rows and notes to the summary and failures to
// run.failures. `largest`: the largest rank count of the check, which also gets the
// high-throughput shape and the (c) lines against the targets. False on a hang (the device must
// not be touched again).
bool RunMoe(RankCountRun& run, LocalRanks& ranks, bool largest);

}  // namespace ncclscope::gpu_check
