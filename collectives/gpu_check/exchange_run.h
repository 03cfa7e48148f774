// The exchange kernel (grouped sends and receives, kernels/exchange.cu) in part (a) of the GPU
// check: for one rank count, on the ranks' device memory, every group of exchange_group.h
// repeated with fresh random bytes, each rank's outputs poisoned before and every received byte
// compared with what its sender sent (and the CPU twin run on the same inputs compared alike);
// the pairs' chunk counters persist across groups from just below 2^32, so they wrap. Then a rank
// that never launches: every other rank's kernel must return with a stall naming it.
#pragma once

#include <cstddef>

#include "collectives/gpu_check/local_ranks.h"
#include "collectives/gpu_check/rank_count_run.h"

namespace ncclscope::gpu_check {

// Where every pair's chunk counters start: every pair that moves two chunks wraps.
inline constexpr uint32_t kChunkCounterStart = 0xFFFFFFFEu;

// Runs the groups and the absent-rank check on `ranks` (each buffer `bytes`, at least
// ExchangeBytesNeeded), adding rows and notes to the summary and failures to run.failures. Leaves
// the stall records zeroed and the exchange's flags as it likes; the other kernels' flags as they
// were. False on a hang (the device must not be touched again).
bool RunExchange(RankCountRun& run, LocalRanks& ranks, size_t bytes);

}  // namespace ncclscope::gpu_check
