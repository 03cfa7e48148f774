// The expected results of the MoE kernels: the C API's CPU twins (ncclscope_moe_dispatch_on_cpu /
// _combine_on_cpu, which follow kernels/moe.cu step for step), one thread per rank over host
// memory that plays every rank's registered buffer, entered with the same plan and epochs as the
// device's calls. Outputs are poisoned as the device's are, so bytes neither side writes compare
// equal and bytes only one side writes do not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/gpu_check/moe_cases.h"
#include "collectives/include/ncclscope/moe.h"

namespace ncclscope::gpu_check {

// One rank's outputs of a dispatch and of its combine (the twin's, or the device's downloaded).
struct MoeRankOutput {
  std::vector<unsigned char> recv_x;           // [recv_capacity][hidden] (device: a prefix)
  std::vector<ncclscope_moe_source> recv_src;  // [recv_capacity]
  std::vector<int32_t> recv_counts;            // [local_experts]
  std::vector<int32_t> send_rows;              // [tokens][top_k]
  std::vector<unsigned char> out;              // [tokens][hidden]
  ncclscope_moe_status dispatch_status{}, combine_status{};
  ncclscope_moe_stall stall{};
};

// Rows a rank received in a dispatch: the sum of its recv_counts.
int64_t ReceivedRows(const MoeRankOutput& o);

// Not thread-safe: one call at a time.
class MoeTwinRanks {
 public:
  // Every rank's registered buffer zeroed, its flags as after epoch first_epoch - 1.
  MoeTwinRanks(const ncclscope_moe_plan& plan, uint32_t first_epoch);
  MoeTwinRanks(const MoeTwinRanks&) = delete;
  MoeTwinRanks& operator=(const MoeTwinRanks&) = delete;

  // One dispatch with `epoch` on every rank (outputs poisoned first). Empty when every rank's call
  // ended; else what went wrong (a bug of the check: the twin waits for no absent rank).
  std::string Dispatch(uint32_t epoch, const std::vector<MoeRankInput>& in,
                       std::vector<MoeRankOutput>* out);
  // The combine of that dispatch, expert_out[r] holding rank r's expert rows.
  std::string Combine(uint32_t epoch, const std::vector<MoeRankInput>& in,
                      const std::vector<std::vector<unsigned char>>& expert_out,
                      std::vector<MoeRankOutput>* out);
  // After a failed run: every flag as after epoch `value`.
  void ResetFlags(uint32_t value);

  // The calls ask for NCCLSCOPE_MOE_DEVICE_EPOCH (their `epoch` argument is then what the buffer
  // must give, not passed), as a CUDA graph's replays do.
  bool device_epoch = false;

 private:
  struct FreeAligned {
    void operator()(unsigned char* p) const;
  };
  ncclscope_moe_common_args Common(int rank, int32_t tokens, uint32_t epoch,
                                   ncclscope_moe_status* status, ncclscope_moe_stall* stall) const;
  ncclscope_moe_plan plan_;
  std::vector<std::unique_ptr<unsigned char, FreeAligned>> buffer_;
};

}  // namespace ncclscope::gpu_check
