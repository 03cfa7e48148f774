#include "collectives/gpu_check/moe_twin.h"

#include <cstdlib>
#include <cstring>
#include <thread>

#include "collectives/gpu_check/kernel_params.h"
#include "collectives/gpu_check/run_limits.h"
#include "collectives/gpu_check/test_data.h"
#include "collectives/moe/moe_buffer.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

std::string Failed(const char* call, int r, ncclscope_moe_result result,
                   const ncclscope_moe_stall& s) {
  return std::string("the CPU twin's ") + call + " of rank " + std::to_string(r) + " returned " +
         ncclscope_moe_result_string(result) +
         (s.code != 0 ? " (waited for rank " + std::to_string(s.peer) + ")" : "");
}

// Empty, or the first rank whose twin call did not run through (a bug of the check: its twins
// wait for no absent rank and count their epochs as the device does).
std::string FirstUnfinished(const char* call, const std::vector<ncclscope_moe_result>& result,
                            const std::vector<MoeRankOutput>& out) {
  for (size_t r = 0; r < result.size(); ++r) {
    if (result[r] == NCCLSCOPE_MOE_TIMEOUT || result[r] == NCCLSCOPE_MOE_STALE_EPOCH ||
        result[r] == NCCLSCOPE_MOE_INVALID_ARGUMENT) {
      return Failed(call, static_cast<int>(r), result[r], out[r].stall);
    }
  }
  return "";
}

}  // namespace

int64_t ReceivedRows(const MoeRankOutput& o) {
  int64_t rows = 0;
  for (int32_t n : o.recv_counts) rows += n;
  return rows;
}

void MoeTwinRanks::FreeAligned::operator()(unsigned char* p) const {
  std::free(p);
}

MoeTwinRanks::MoeTwinRanks(const ncclscope_moe_plan& plan, uint32_t first_epoch) : plan_(plan) {
  const size_t bytes = static_cast<size_t>(plan.buffer_bytes);
  for (int r = 0; r < plan.config.nranks; ++r) {
    buffer_.emplace_back(static_cast<unsigned char*>(std::aligned_alloc(128, bytes)));
    std::memset(buffer_.back().get(), 0, bytes);
  }
  ResetFlags(first_epoch - 1);
}

void MoeTwinRanks::ResetFlags(uint32_t value) {
  for (auto& b : buffer_) {
    const nc::MoeBuffer m{b.get(), &plan_};
    FillFlags(m.signal(), value);
    *m.last_epoch() = value;
  }
}

ncclscope_moe_common_args MoeTwinRanks::Common(int rank, int32_t tokens, uint32_t epoch,
                                               ncclscope_moe_status* status,
                                               ncclscope_moe_stall* stall) const {
  ncclscope_moe_common_args a{};
  a.plan = plan_;
  for (int q = 0; q < plan_.config.nranks; ++q) a.buffer[q] = buffer_[static_cast<size_t>(q)].get();
  a.status = status;
  a.stall = stall;
  a.timeout_ns = kTwinTimeoutNs;
  a.rank = rank;
  a.epoch = device_epoch ? 0 : epoch;
  a.flags = device_epoch ? NCCLSCOPE_MOE_DEVICE_EPOCH : 0;
  a.num_tokens = tokens;
  return a;
}

std::string MoeTwinRanks::Dispatch(uint32_t epoch, const std::vector<MoeRankInput>& in,
                                   std::vector<MoeRankOutput>* out) {
  const int n = plan_.config.nranks;
  const auto capacity = static_cast<size_t>(plan_.config.recv_capacity);
  out->resize(static_cast<size_t>(n));
  std::vector<ncclscope_moe_result> result(static_cast<size_t>(n));
  OnEveryRank(n, [&](int r) {
    const MoeRankInput& i = in[static_cast<size_t>(r)];
    MoeRankOutput& o = (*out)[static_cast<size_t>(r)];
    o.recv_x.resize(capacity * static_cast<size_t>(plan_.row_bytes));
    o.recv_src.resize(capacity);
    o.recv_counts.resize(static_cast<size_t>(plan_.local_experts));
    o.send_rows.resize(i.topk.size());
    std::memset(o.recv_x.data(), kPoison, o.recv_x.size());
    std::memset(o.recv_src.data(), kPoison, o.recv_src.size() * sizeof(ncclscope_moe_source));
    std::memset(o.recv_counts.data(), kPoison, o.recv_counts.size() * sizeof(int32_t));
    std::memset(o.send_rows.data(), kPoison, o.send_rows.size() * sizeof(int32_t));
    std::memset(&o.dispatch_status, kPoison, sizeof(o.dispatch_status));
    o.stall = ncclscope_moe_stall{};
    ncclscope_moe_dispatch_args a{};
    a.common = Common(r, i.tokens, epoch, &o.dispatch_status, &o.stall);
    a.x = i.x.data();
    a.topk_idx = i.topk.data();
    a.recv_x = o.recv_x.data();
    a.recv_src = o.recv_src.data();
    a.recv_counts = o.recv_counts.data();
    a.send_rows = o.send_rows.data();
    result[static_cast<size_t>(r)] = ncclscope_moe_dispatch_on_cpu(&a);
  });
  return FirstUnfinished("dispatch", result, *out);
}

std::string MoeTwinRanks::Combine(uint32_t epoch, const std::vector<MoeRankInput>& in,
                                  const std::vector<std::vector<unsigned char>>& expert_out,
                                  std::vector<MoeRankOutput>* out) {
  const int n = plan_.config.nranks;
  std::vector<ncclscope_moe_result> result(static_cast<size_t>(n));
  OnEveryRank(n, [&](int r) {
    const MoeRankInput& i = in[static_cast<size_t>(r)];
    MoeRankOutput& o = (*out)[static_cast<size_t>(r)];
    o.out.assign(i.x.size(), kPoison);
    std::memset(&o.combine_status, kPoison, sizeof(o.combine_status));
    o.stall = ncclscope_moe_stall{};
    ncclscope_moe_combine_args a{};
    a.common = Common(r, i.tokens, epoch, &o.combine_status, &o.stall);
    a.expert_out = expert_out[static_cast<size_t>(r)].data();
    a.recv_counts = o.recv_counts.data();
    a.topk_idx = i.topk.data();
    a.send_rows = o.send_rows.data();
    a.topk_weights = i.weights.data();
    a.out = o.out.data();
    result[static_cast<size_t>(r)] = ncclscope_moe_combine_on_cpu(&a);
  });
  return FirstUnfinished("combine", result, *out);
}

}  // namespace ncclscope::gpu_check
