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

// The offsets of a rank's inputs and outputs in its arena for plan p; *bytes: the arena's size.
MoeDeviceRank ArenaLayout(const ncclscope_moe_plan& p, size_t* bytes) {
  size_t end = 0;
  auto place = [&end](size_t n) {
    const size_t at = end;
    end = (end + n + kAlign - 1) / kAlign * kAlign;
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
  *bytes = end;
  return layout;
}

// The rank's flags and last epoch as after epoch `value` (asynchronous: the caller synchronizes).
CUresult WriteFlags(const Driver& cu, const ncclscope_moe_plan& p, const MoeDeviceRank& m,
                    uint32_t value) {
  auto flags = std::make_unique<nc::Signal>();
  FillFlags(flags.get(), value);
  const CUresult r = cu.memcpy_htod(m.buffer + static_cast<CUdeviceptr>(p.buffer_signal),
                                    flags.get(), sizeof(nc::Signal));
  return r != CUDA_SUCCESS ? r
                           : cu.memcpy_htod(m.buffer + static_cast<CUdeviceptr>(p.buffer_epoch),
                                            &value, sizeof(value));
}

}  // namespace

ncclscope_moe_common_args MoeCommonArgs(const MoeCaseRun& x, int r, uint32_t epoch,
                                        uint64_t timeout_ns) {
  ncclscope_moe_common_args a{};
  a.plan = x.plan;
  for (size_t q = 0; q < x.dev.size(); ++q) {
    a.buffer[q] = reinterpret_cast<void*>(x.dev[q].buffer);
  }
  a.stall = reinterpret_cast<ncclscope_moe_stall*>(x.ranks.mem[static_cast<size_t>(r)].stall);
  a.timeout_ns = timeout_ns;
  a.rank = r;
  a.epoch = x.device_epoch ? 0 : epoch;
  a.flags = x.device_epoch ? NCCLSCOPE_MOE_DEVICE_EPOCH : 0;
  a.num_tokens = x.in[static_cast<size_t>(r)].tokens;
  return a;
}

bool AllocateMoeRank(const Driver& cu, const ncclscope_moe_plan& p, uint32_t first_epoch,
                     MoeDeviceRank* m, std::string* error) {
  size_t arena = 0;
  const MoeDeviceRank layout = ArenaLayout(p, &arena);
  CUresult res = cu.mem_alloc(&m->buffer, static_cast<size_t>(p.buffer_bytes));
  if (res == CUDA_SUCCESS) res = cu.mem_alloc(&m->arena, arena);
  if (res == CUDA_SUCCESS) res = cu.memset_d8(m->buffer, 0, static_cast<size_t>(p.buffer_bytes));
  if (res == CUDA_SUCCESS) res = WriteFlags(cu, p, *m, first_epoch - 1);
  if (res == CUDA_SUCCESS) res = cu.ctx_synchronize();
  if (res != CUDA_SUCCESS) {
    *error = "allocating " + std::to_string(p.buffer_bytes + static_cast<int64_t>(arena)) +
             " bytes a rank: " + ErrorText(cu, res);
    return false;
  }
  for (CUdeviceptr MoeDeviceRank::*f :
       {&MoeDeviceRank::x, &MoeDeviceRank::topk, &MoeDeviceRank::weights, &MoeDeviceRank::recv_x,
        &MoeDeviceRank::recv_src, &MoeDeviceRank::recv_counts, &MoeDeviceRank::send_rows,
        &MoeDeviceRank::expert_out, &MoeDeviceRank::out, &MoeDeviceRank::status}) {
    m->*f = m->arena + layout.*f;
  }
  return true;
}

void FreeMoeRank(const Driver& cu, MoeDeviceRank* m) {
  if (m->buffer != 0) cu.mem_free(m->buffer);
  if (m->arena != 0) cu.mem_free(m->arena);
  *m = MoeDeviceRank{};
}

std::string UploadMoeRankInput(const Driver& cu, const MoeDeviceRank& m, const MoeRankInput& in) {
  if (Upload(cu, m.x, in.x.data(), in.x.size()) != CUDA_SUCCESS ||
      Upload(cu, m.topk, in.topk.data(), in.topk.size() * 4) != CUDA_SUCCESS ||
      Upload(cu, m.weights, in.weights.data(), in.weights.size() * 4) != CUDA_SUCCESS) {
    return "uploading the tokens failed";
  }
  return "";
}

bool UploadMoeRankExpertRows(const Driver& cu, const MoeDeviceRank& m,
                             const std::vector<unsigned char>& rows) {
  return Upload(cu, m.expert_out, rows.data(), rows.size()) == CUDA_SUCCESS;
}

CUresult PoisonMoeOutputs(const Driver& cu, const ncclscope_moe_plan& p, const MoeDeviceRank& m,
                          bool dispatch) {
  const CUdeviceptr status = m.status + (dispatch ? 0 : sizeof(ncclscope_moe_status));
  CUresult res = Poison(cu, status, sizeof(ncclscope_moe_status));
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
  return res;
}

ncclscope_moe_dispatch_args MoeDispatchArgs(const ncclscope_moe_common_args& common,
                                            const MoeDeviceRank& m) {
  ncclscope_moe_dispatch_args a{};
  a.common = common;
  a.common.status = reinterpret_cast<ncclscope_moe_status*>(m.status);
  a.x = reinterpret_cast<const void*>(m.x);
  a.topk_idx = reinterpret_cast<const int32_t*>(m.topk);
  a.recv_x = reinterpret_cast<void*>(m.recv_x);
  a.recv_src = reinterpret_cast<ncclscope_moe_source*>(m.recv_src);
  a.recv_counts = reinterpret_cast<int32_t*>(m.recv_counts);
  a.send_rows = reinterpret_cast<int32_t*>(m.send_rows);
  return a;
}

ncclscope_moe_combine_args MoeCombineArgs(const ncclscope_moe_common_args& common,
                                          const MoeDeviceRank& m) {
  ncclscope_moe_combine_args a{};
  a.common = common;
  a.common.status = reinterpret_cast<ncclscope_moe_status*>(m.status) + 1;
  a.expert_out = reinterpret_cast<const void*>(m.expert_out);
  a.recv_counts = reinterpret_cast<const int32_t*>(m.recv_counts);
  a.topk_idx = reinterpret_cast<const int32_t*>(m.topk);
  a.send_rows = reinterpret_cast<const int32_t*>(m.send_rows);
  a.topk_weights = reinterpret_cast<const float*>(m.weights);
  a.out = reinterpret_cast<void*>(m.out);
  return a;
}

bool DownloadMoeDispatch(const Driver& cu, const ncclscope_moe_plan& p, const MoeDeviceRank& m,
                         size_t entries, MoeRankOutput* o) {
  o->recv_counts.resize(static_cast<size_t>(p.local_experts));
  o->recv_src.resize(Capacity(p));
  o->send_rows.resize(entries);
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

bool DownloadMoeCombine(const Driver& cu, const MoeDeviceRank& m, size_t out_bytes,
                        MoeRankOutput* o) {
  o->out.resize(out_bytes);
  return cu.memcpy_dtoh(&o->combine_status, m.status + sizeof(ncclscope_moe_status),
                        sizeof(ncclscope_moe_status)) == CUDA_SUCCESS &&
         (o->out.empty() || cu.memcpy_dtoh(o->out.data(), m.out, o->out.size()) == CUDA_SUCCESS);
}

// The flags of every rank's registered buffer as after epoch `value`, the stall records zeroed.
bool ResetMoeFlags(const MoeCaseRun& x, uint32_t value) {
  const Driver& cu = x.run.cu;
  for (size_t r = 0; r < x.dev.size(); ++r) {
    if (WriteFlags(cu, x.plan, x.dev[r], value) != CUDA_SUCCESS ||
        cu.memset_d8(x.ranks.mem[r].stall, 0, sizeof(nc::KernelStall)) != CUDA_SUCCESS) {
      return false;
    }
  }
  return cu.ctx_synchronize() == CUDA_SUCCESS;
}

void FreeMoeDevice(const Driver& cu, std::vector<MoeDeviceRank>* dev) {
  for (MoeDeviceRank& m : *dev) FreeMoeRank(cu, &m);
  dev->clear();
}

// Every rank's memory, the registered buffers zeroed with their flags as after first_epoch - 1.
bool AllocateMoeDevice(MoeCaseRun& x, uint32_t first_epoch, std::string* error) {
  x.dev.assign(static_cast<size_t>(x.ranks.nranks), MoeDeviceRank{});
  for (MoeDeviceRank& m : x.dev) {
    if (!AllocateMoeRank(x.run.cu, x.plan, first_epoch, &m, error)) return false;
  }
  for (const DeviceRank& r : x.ranks.mem) {
    if (x.run.cu.memset_d8(r.stall, 0, sizeof(nc::KernelStall)) != CUDA_SUCCESS) {
      *error = "zeroing the stall records failed";
      return false;
    }
  }
  return true;
}

std::string UploadMoeInputs(const MoeCaseRun& x) {
  for (size_t r = 0; r < x.in.size(); ++r) {
    const std::string why = UploadMoeRankInput(x.run.cu, x.dev[r], x.in[r]);
    if (!why.empty()) return "rank " + std::to_string(r) + ": " + why;
  }
  return "";
}

std::string UploadExpertRows(const MoeCaseRun& x,
                             const std::vector<std::vector<unsigned char>>& expert_out) {
  for (size_t r = 0; r < expert_out.size(); ++r) {
    if (!UploadMoeRankExpertRows(x.run.cu, x.dev[r], expert_out[r])) {
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
    CUresult res = PoisonMoeOutputs(cu, p, x.dev[static_cast<size_t>(r)], dispatch);
    if (res == CUDA_SUCCESS)
      res = cu.memset_d8(x.ranks.mem[static_cast<size_t>(r)].stall, 0, sizeof(nc::KernelStall));
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
    const ncclscope_moe_common_args common = MoeCommonArgs(x, r, epoch, timeout_ns);
    void* param = nullptr;
    if (dispatch) {
      d[static_cast<size_t>(r)] = MoeDispatchArgs(common, m);
      param = &d[static_cast<size_t>(r)];
    } else {
      c[static_cast<size_t>(r)] = MoeCombineArgs(common, m);
      param = &c[static_cast<size_t>(r)];
    }
    launches.push_back(RankLaunch{dispatch ? x.run.kernels.moe_dispatch : x.run.kernels.moe_combine,
                                  static_cast<unsigned>(p.config.blocks),
                                  static_cast<unsigned>(p.config.threads), param});
  }
  return LaunchRanks(cu, x.ranks, launches.data(), timeout_ns, absent);
}

bool DownloadDispatch(const MoeCaseRun& x, int r, MoeRankOutput* o) {
  return DownloadMoeDispatch(x.run.cu, x.plan, x.dev[static_cast<size_t>(r)],
                             x.in[static_cast<size_t>(r)].topk.size(), o);
}

bool DownloadCombine(const MoeCaseRun& x, int r, MoeRankOutput* o) {
  return DownloadMoeCombine(x.run.cu, x.dev[static_cast<size_t>(r)],
                            x.in[static_cast<size_t>(r)].x.size(), o);
}

}  // namespace ncclscope::gpu_check
