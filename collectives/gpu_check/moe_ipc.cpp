#include "collectives/gpu_check/moe_ipc.h"

#include "collectives/gpu_check/moe_compare.h"
#include "collectives/gpu_check/moe_twin.h"
#include "collectives/planner/allreduce_kernel_args.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

std::vector<Case> IpcCases(int nranks, int reps) {
  CaseLimits limits;
  limits.max_bytes = size_t{1} << 30;
  limits.reps = limits.big_reps = reps;
  std::vector<Case> cases;
  for (const Case& c : BuildMoeCases(nranks, false, limits)) {
    if (c.moe.hidden == 128 && cases.size() < kMaxMoeIpcCases) cases.push_back(c);
  }
  return cases;
}

// Zeroes the stall record, lets the poison and uploads land, then runs this rank's call.
std::string LaunchCall(const Driver& cu, CUfunction fn, const ncclscope_moe_plan& p, void* param,
                       CUstream stream, CUdeviceptr stall, uint64_t timeout_ns, bool* hang) {
  CUresult r = cu.memset_d8(stall, 0, sizeof(nc::KernelStall));
  if (r == CUDA_SUCCESS) r = cu.ctx_synchronize();
  if (r != CUDA_SUCCESS) return ErrorText(cu, r);
  return LaunchAndWait(cu, fn, static_cast<unsigned>(p.config.blocks),
                       static_cast<unsigned>(p.config.threads), param, stream, stall, timeout_ns,
                       hang);
}

// One run of one case: dispatch with `epoch`, the experts, combine with epoch + 1.
std::string RunOnce(const Driver& cu, const Kernels& k, CUstream stream, CUdeviceptr stall,
                    uint64_t seed, uint64_t timeout_ns, const MoeIpcRank& m, size_t index, int rep,
                    uint32_t epoch, MoeTwinRanks& twin, MoeIpcOutcome* out) {
  const MoeIpcCase& x = m.cases[index];
  const auto mine = static_cast<size_t>(m.rank);
  std::vector<MoeRankInput> in;
  for (int q = 0; q < m.nranks; ++q) in.push_back(MakeMoeInput(x.c, seed, index, rep, q));
  std::vector<MoeRankOutput> want;
  std::string why = twin.Dispatch(epoch, in, &want);
  ncclscope_moe_common_args common{};
  common.plan = x.plan;
  for (int q = 0; q < m.nranks; ++q) common.buffer[q] = x.peer[q];
  common.stall = reinterpret_cast<ncclscope_moe_stall*>(stall);
  common.timeout_ns = timeout_ns;
  common.rank = m.rank;
  common.epoch = epoch;
  common.num_tokens = in[mine].tokens;
  if (why.empty()) why = UploadMoeRankInput(cu, x.mem, in[mine]);
  if (why.empty() && PoisonMoeOutputs(cu, x.plan, x.mem, true) != CUDA_SUCCESS) {
    why = "poisoning the dispatch's outputs failed";
  }
  ncclscope_moe_dispatch_args d = MoeDispatchArgs(common, x.mem);
  ++out->calls;
  if (why.empty()) {
    why = LaunchCall(cu, k.moe_dispatch, x.plan, &d, stream, stall, timeout_ns, &out->hang);
  }
  MoeRankOutput got;
  if (why.empty() && !DownloadMoeDispatch(cu, x.plan, x.mem, in[mine].topk.size(), &got)) {
    why = "downloading the dispatch's outputs failed";
  }
  if (why.empty()) why = CompareDispatch(x.plan, m.rank, got, want[mine]);
  if (!why.empty()) return "dispatch: " + why;

  std::vector<std::vector<unsigned char>> expert_out(static_cast<size_t>(m.nranks));
  for (size_t q = 0; q < expert_out.size(); ++q) {
    expert_out[q].resize(static_cast<size_t>(ReceivedRows(want[q]) * x.plan.row_bytes));
    ApplyExperts(x.plan, want[q].recv_x.data(), want[q].recv_counts.data(), expert_out[q].data());
  }
  why = twin.Combine(epoch + 1, in, expert_out, &want);
  if (why.empty() && !UploadMoeRankExpertRows(cu, x.mem, expert_out[mine])) {
    why = "uploading the expert rows failed";
  }
  if (why.empty() && PoisonMoeOutputs(cu, x.plan, x.mem, false) != CUDA_SUCCESS) {
    why = "poisoning the combine's output failed";
  }
  common.epoch = epoch + 1;
  ncclscope_moe_combine_args c = MoeCombineArgs(common, x.mem);
  ++out->calls;
  if (why.empty()) {
    why = LaunchCall(cu, k.moe_combine, x.plan, &c, stream, stall, timeout_ns, &out->hang);
  }
  if (why.empty() && !DownloadMoeCombine(cu, x.mem, in[mine].x.size(), &got)) {
    why = "downloading the combine's output failed";
  }
  if (why.empty()) why = CompareCombine(x.plan, m.rank, got, want[mine]);
  return why.empty() ? "" : "combine: " + why;
}

}  // namespace

bool PrepareMoeIpc(const Driver& cu, int rank, int nranks, int reps, MoeIpcRank* m,
                   MoeIpcHandles* handles, std::string* error) {
  m->rank = rank;
  m->nranks = nranks;
  m->first_epoch = 0u - static_cast<uint32_t>(reps);  // two calls a run: wraps halfway
  for (const Case& c : IpcCases(nranks, reps)) {
    MoeIpcCase& x = m->cases.emplace_back();
    x.c = c;
    ncclscope_moe_config config = MoeConfig(c, 0);
    if (ncclscope_moe_plan_make(&config, &x.plan) != NCCLSCOPE_MOE_OK) {
      *error = "no plan for " + CaseName(c);
      return false;
    }
    x.c.blocks = static_cast<uint32_t>(x.plan.config.blocks);
    x.c.threads = static_cast<uint32_t>(x.plan.config.threads);
    if (!AllocateMoeRank(cu, x.plan, m->first_epoch, &x.mem, error)) return false;
    const size_t i = m->cases.size() - 1;
    if (CUresult r = cu.ipc_get_mem_handle(&handles->buffer[i], x.mem.buffer); r != CUDA_SUCCESS) {
      *error = "cuIpcGetMemHandle of a MoE buffer: " + ErrorText(cu, r);
      return false;
    }
    handles->cases = static_cast<int32_t>(m->cases.size());
  }
  return true;
}

bool OpenMoePeers(const Driver& cu, const MoeIpcHandles* every_rank, MoeIpcRank* m,
                  std::string* error) {
  for (size_t i = 0; i < m->cases.size(); ++i) {
    MoeIpcCase& x = m->cases[i];
    for (int q = 0; q < m->nranks; ++q) {
      if (q == m->rank) {
        x.peer[q] = reinterpret_cast<void*>(x.mem.buffer);
        continue;
      }
      if (every_rank[q].cases != static_cast<int32_t>(m->cases.size())) {
        *error = "rank " + std::to_string(q) + " prepared " + std::to_string(every_rank[q].cases) +
                 " MoE cases, this rank " + std::to_string(m->cases.size());
        return false;
      }
      CUdeviceptr p = 0;
      const CUresult r =
          cu.ipc_open_mem_handle(&p, every_rank[q].buffer[i], CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      if (r != CUDA_SUCCESS) {
        *error = "cuIpcOpenMemHandle of rank " + std::to_string(q) +
                 "'s MoE buffer: " + ErrorText(cu, r);
        return false;
      }
      x.peer[q] = reinterpret_cast<void*>(p);
    }
  }
  return true;
}

MoeIpcOutcome RunMoeIpc(const Driver& cu, const Kernels& k, CUstream stream, CUdeviceptr stall,
                        uint64_t seed, uint64_t timeout_ns, MoeIpcRank& m) {
  MoeIpcOutcome out;
  for (size_t i = 0; i < m.cases.size() && out.first.empty(); ++i) {
    const MoeIpcCase& x = m.cases[i];
    MoeTwinRanks twin(x.plan, m.first_epoch);
    uint32_t epoch = m.first_epoch;
    for (int rep = 0; rep < x.c.reps; ++rep, epoch += 2) {
      const std::string why =
          RunOnce(cu, k, stream, stall, seed, timeout_ns, m, i, rep, epoch, twin, &out);
      if (!why.empty()) {
        ++out.wrong;
        out.first = CaseName(x.c) + ", run " + std::to_string(rep) + ": " + why;
        break;
      }
    }
  }
  return out;
}

void CloseMoePeers(const Driver& cu, MoeIpcRank* m) {
  for (MoeIpcCase& x : m->cases) {
    for (int q = 0; q < m->nranks; ++q) {
      if (q != m->rank && x.peer[q] != nullptr) {
        cu.ipc_close_mem_handle(reinterpret_cast<CUdeviceptr>(x.peer[q]));
      }
      x.peer[q] = nullptr;
    }
  }
}

void FreeMoeIpc(const Driver& cu, MoeIpcRank* m) {
  for (MoeIpcCase& x : m->cases) FreeMoeRank(cu, &x.mem);
  m->cases.clear();
}

}  // namespace ncclscope::gpu_check
