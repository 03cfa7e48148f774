#include "collectives/gpu_check/moe_device.h"

#include <algorithm>
#include <memory>

#include "collectives/gpu_check/kernel_params.h"
#include "collectives/gpu_check/test_data.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

constexpr size_t kAlign = 256;  // cudaMalloc's: 16-byte rows, 128-byte registered buffers

size_t Entries(const ncclscope_moe_plan& p) {
  return static_cast<size_t>(p.config.max_tokens) * static_cast<size_t>(p.config.top_k);
}
size_t Capacity(const ncclscope_moe_plan& p) {
  return static_cast<size_t>(p.config.recv_capacity);
}
size_t Row(const ncclscope_moe_plan& p) {
  return static_cast<size_t>(p.row_bytes);
}

CUresult Upload(const Driver& cu, CUdeviceptr to, const void* from, size_t bytes) {
  return bytes == 0 ? CUDA_SUCCESS : cu.memcpy_htod(to, from, bytes);
}
CUresult Poison(const Driver& cu, CUdeviceptr at, size_t bytes) {
  return bytes == 0 ? CUDA_SUCCESS : cu.memset_d8(at, kPoison, bytes);
}

ncclscope_moe_common_args Common(const MoeCaseRun& x, int r, uint32_t epoch, int call,
                                 uint64_t timeout_ns) {
  ncclscope_moe_common_args a{};
  a.plan = x.plan;
  for (size_t q = 0; q < x.dev.size(); ++q) {
    a.buffer[q] = reinterpret_cast<void*>(x.dev[q].buffer);
  }
  const MoeDeviceRank& m = x.dev[static_cast<size_t>(r)];
  a.status = reinterpret_cast<ncclscope_moe_status*>(m.status) + call;
  a.stall = reinterpret_cast<ncclscope_moe_stall*>(x.ranks.mem[static_cast<size_t>(r)].stall);
  a.timeout_ns = timeout_ns;
  a.rank = r;
  a.epoch = epoch;
  a.num_tokens = x.in[static_cast<size_t>(r)].tokens;
  return a;
}

}  // namespace

// The flags of every rank's registered buffer as after epoch `value`, the stall records zeroed.
bool ResetMoeFlags(const MoeCaseRun& x, uint32_t value) {
  const Driver& cu = x.run.cu;
  auto flags = std::make_unique<nc::Signal>();
  FillFlags(flags.get(), value);
  for (size_t r = 0; r < x.dev.size(); ++r) {
    if (cu.memcpy_htod(x.dev[r].buffer + static_cast<CUdeviceptr>(x.plan.buffer_signal),
                       flags.get(), sizeof(nc::Signal)) != CUDA_SUCCESS ||
        cu.memset_d8(x.ranks.mem[r].stall, 0, sizeof(nc::KernelStall)) != CUDA_SUCCESS) {
      return false;
    }
  }
  return cu.ctx_synchronize() == CUDA_SUCCESS;
}

void FreeMoeDevice(const Driver& cu, std::vector<MoeDeviceRank>* dev) {
  for (MoeDeviceRank& m : *dev) {
    if (m.buffer != 0) cu.mem_free(m.buffer);
    if (m.arena != 0) cu.mem_free(m.arena);
  }
  dev->clear();
}

// Every rank's memory, the registered buffers zeroed with their flags as after first_epoch - 1.
bool AllocateMoeDevice(MoeCaseRun& x, uint32_t first_epoch, std::string* error) {
  const Driver& cu = x.run.cu;
  const ncclscope_moe_plan& p = x.plan;
  size_t end = 0;
  auto place = [&end](size_t bytes) {
    const size_t at = end;
    end = (end + bytes + kAlign - 1) / kAlign * kAlign;
    return static_cast<CUdeviceptr>(at);
  };
  MoeDeviceRank layout;
  layout.x = place(static_cast<size_t>(p.config.max_tokens) * Row(p));
  layout.topk = place(Entries(p) * 4);
  layout.weights = place(Entries(p) * 4);
  layout.recv_x = place(Capacity(p) * Row(p));
  layout.recv_src = place(Capacity(p) * sizeof(ncclscope_moe_source));
  layout.recv_counts = place(static_cast<size_t>(p.local_experts) * 4);
  layout.send_rows = place(Entries(p) * 4);
  layout.expert_out = place(Capacity(p) * Row(p));
  layout.out = place(static_cast<size_t>(p.config.max_tokens) * Row(p));
  layout.status = place(2 * sizeof(ncclscope_moe_status));
  x.dev.assign(static_cast<size_t>(x.ranks.nranks), MoeDeviceRank{});
  for (MoeDeviceRank& m : x.dev) {
    CUresult res = cu.mem_alloc(&m.buffer, static_cast<size_t>(p.buffer_bytes));
    if (res == CUDA_SUCCESS) res = cu.mem_alloc(&m.arena, end);
    if (res == CUDA_SUCCESS) res = cu.memset_d8(m.buffer, 0, static_cast<size_t>(p.buffer_bytes));
    if (res != CUDA_SUCCESS) {
      *error = "allocating " + std::to_string(p.buffer_bytes + static_cast<int64_t>(end)) +
               " bytes a rank: " + ErrorText(cu, res);
      return false;
    }
    for (CUdeviceptr MoeDeviceRank::*f :
         {&MoeDeviceRank::x, &MoeDeviceRank::topk, &MoeDeviceRank::weights, &MoeDeviceRank::recv_x,
          &MoeDeviceRank::recv_src, &MoeDeviceRank::recv_counts, &MoeDeviceRank::send_rows,
          &MoeDeviceRank::expert_out, &MoeDeviceRank::out, &MoeDeviceRank::status}) {
      m.*f = m.arena + layout.*f;
    }
  }
  if (!ResetMoeFlags(x, first_epoch - 1)) {
    *error = "writing the flags failed";
    return false;
  }
  return true;
}

std::string UploadMoeInputs(const MoeCaseRun& x) {
  const Driver& cu = x.run.cu;
  for (size_t r = 0; r < x.in.size(); ++r) {
    const MoeRankInput& i = x.in[r];
    const MoeDeviceRank& m = x.dev[r];
    if (Upload(cu, m.x, i.x.data(), i.x.size()) != CUDA_SUCCESS ||
        Upload(cu, m.topk, i.topk.data(), i.topk.size() * 4) != CUDA_SUCCESS ||
        Upload(cu, m.weights, i.weights.data(), i.weights.size() * 4) != CUDA_SUCCESS) {
      return "uploading rank " + std::to_string(r) + "'s tokens failed";
    }
  }
  return "";
}

std::string UploadExpertRows(const MoeCaseRun& x,
                             const std::vector<std::vector<unsigned char>>& expert_out) {
  for (size_t r = 0; r < expert_out.size(); ++r) {
    const std::vector<unsigned char>& e = expert_out[r];
    if (Upload(x.run.cu, x.dev[r].expert_out, e.data(), e.size()) != CUDA_SUCCESS) {
      return "uploading rank " + std::to_string(r) + "'s expert rows failed";
    }
  }
  return "";
}

LaunchOutcome LaunchMoe(MoeCaseRun& x, bool dispatch, uint32_t epoch, uint64_t timeout_ns,
                        int absent) {
  const Driver& cu = x.run.cu;
  const ncclscope_moe_plan& p = x.plan;
  const int n = x.ranks.nranks;
  LaunchOutcome out;
  for (int r = 0; r < n && out.error.empty(); ++r) {
    const MoeDeviceRank& m = x.dev[static_cast<size_t>(r)];
    const CUdeviceptr status = m.status + (dispatch ? 0 : sizeof(ncclscope_moe_status));
    CUresult res = Poison(cu, status, sizeof(ncclscope_moe_status));
    if (res == CUDA_SUCCESS)
      res = cu.memset_d8(x.ranks.mem[static_cast<size_t>(r)].stall, 0, sizeof(nc::KernelStall));
    if (dispatch) {
      if (res == CUDA_SUCCESS) res = Poison(cu, m.recv_x, Capacity(p) * Row(p));
      if (res == CUDA_SUCCESS)
        res = Poison(cu, m.recv_src, Capacity(p) * sizeof(ncclscope_moe_source));
      if (res == CUDA_SUCCESS)
        res = Poison(cu, m.recv_counts, static_cast<size_t>(p.local_experts) * 4);
      if (res == CUDA_SUCCESS) res = Poison(cu, m.send_rows, Entries(p) * 4);
    } else if (res == CUDA_SUCCESS) {
      res = Poison(cu, m.out, static_cast<size_t>(p.config.max_tokens) * Row(p));
    }
    if (res != CUDA_SUCCESS) out.error = "poisoning the outputs: " + ErrorText(cu, res);
  }
  if (out.error.empty()) {
    if (CUresult res = cu.ctx_synchronize(); res != CUDA_SUCCESS) {
      out.error = "cuCtxSynchronize: " + ErrorText(cu, res);
    }
  }
  if (!out.error.empty()) return out;
  std::vector<ncclscope_moe_dispatch_args> d(static_cast<size_t>(n));
  std::vector<ncclscope_moe_combine_args> c(static_cast<size_t>(n));
  std::vector<RankLaunch> launches;
  for (int r = 0; r < n; ++r) {
    const MoeDeviceRank& m = x.dev[static_cast<size_t>(r)];
    void* param = nullptr;
    if (dispatch) {
      ncclscope_moe_dispatch_args& a = d[static_cast<size_t>(r)];
      a.common = Common(x, r, epoch, 0, timeout_ns);
      a.x = reinterpret_cast<const void*>(m.x);
      a.topk_idx = reinterpret_cast<const int32_t*>(m.topk);
      a.recv_x = reinterpret_cast<void*>(m.recv_x);
      a.recv_src = reinterpret_cast<ncclscope_moe_source*>(m.recv_src);
      a.recv_counts = reinterpret_cast<int32_t*>(m.recv_counts);
      a.send_rows = reinterpret_cast<int32_t*>(m.send_rows);
      param = &a;
    } else {
      ncclscope_moe_combine_args& a = c[static_cast<size_t>(r)];
      a.common = Common(x, r, epoch, 1, timeout_ns);
      a.expert_out = reinterpret_cast<const void*>(m.expert_out);
      a.recv_counts = reinterpret_cast<const int32_t*>(m.recv_counts);
      a.topk_idx = reinterpret_cast<const int32_t*>(m.topk);
      a.send_rows = reinterpret_cast<const int32_t*>(m.send_rows);
      a.topk_weights = reinterpret_cast<const float*>(m.weights);
      a.out = reinterpret_cast<void*>(m.out);
      param = &a;
    }
    launches.push_back(RankLaunch{dispatch ? x.run.kernels.moe_dispatch : x.run.kernels.moe_combine,
                                  static_cast<unsigned>(p.config.blocks),
                                  static_cast<unsigned>(p.config.threads), param});
  }
  return LaunchRanks(cu, x.ranks, launches.data(), timeout_ns, absent);
}

// Rank r's dispatch outputs from the device: everything but recv_x's rows past the received ones
// and one more.
bool DownloadDispatch(const MoeCaseRun& x, int r, MoeRankOutput* o) {
  const Driver& cu = x.run.cu;
  const ncclscope_moe_plan& p = x.plan;
  const MoeDeviceRank& m = x.dev[static_cast<size_t>(r)];
  o->recv_counts.resize(static_cast<size_t>(p.local_experts));
  o->recv_src.resize(Capacity(p));
  o->send_rows.resize(x.in[static_cast<size_t>(r)].topk.size());
  bool ok =
      cu.memcpy_dtoh(&o->dispatch_status, m.status, sizeof(ncclscope_moe_status)) == CUDA_SUCCESS &&
      cu.memcpy_dtoh(o->recv_counts.data(), m.recv_counts, o->recv_counts.size() * 4) ==
          CUDA_SUCCESS &&
      cu.memcpy_dtoh(o->recv_src.data(), m.recv_src,
                     o->recv_src.size() * sizeof(ncclscope_moe_source)) == CUDA_SUCCESS &&
      (o->send_rows.empty() ||
       cu.memcpy_dtoh(o->send_rows.data(), m.send_rows, o->send_rows.size() * 4) == CUDA_SUCCESS);
  int64_t rows = 0;
  for (int32_t c : o->recv_counts) rows += c >= 0 && c <= p.config.recv_capacity ? c : 0;
  const size_t keep = std::min(Capacity(p), static_cast<size_t>(rows) + 1);
  o->recv_x.resize(keep * Row(p));
  return ok && (o->recv_x.empty() ||
                cu.memcpy_dtoh(o->recv_x.data(), m.recv_x, o->recv_x.size()) == CUDA_SUCCESS);
}

bool DownloadCombine(const MoeCaseRun& x, int r, MoeRankOutput* o) {
  const Driver& cu = x.run.cu;
  const MoeDeviceRank& m = x.dev[static_cast<size_t>(r)];
  o->out.resize(x.in[static_cast<size_t>(r)].x.size());
  return cu.memcpy_dtoh(&o->combine_status, m.status + sizeof(ncclscope_moe_status),
                        sizeof(ncclscope_moe_status)) == CUDA_SUCCESS &&
         (o->out.empty() || cu.memcpy_dtoh(o->out.data(), m.out, o->out.size()) == CUDA_SUCCESS);
}

}  // namespace ncclscope::gpu_check
