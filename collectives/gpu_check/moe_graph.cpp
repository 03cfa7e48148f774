#include "collectives/gpu_check/moe_graph.h"

#include <cstdio>
#include <string>
#include <vector>

#include "collectives/gpu_check/moe_cases.h"
#include "collectives/gpu_check/moe_compare.h"
#include "collectives/gpu_check/moe_device.h"
#include "collectives/gpu_check/moe_twin.h"
#include "collectives/gpu_check/run_limits.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

// One executable graph per rank for one kernel; destroyed with the object.
class RankGraphs {
 public:
  RankGraphs(const Driver& cu, int n) : cu_(cu), graph_(n), exec_(n) {}
  RankGraphs(const RankGraphs&) = delete;
  RankGraphs& operator=(const RankGraphs&) = delete;
  ~RankGraphs() {
    for (CUgraphExec e : exec_) {
      if (e != nullptr) cu_.graph_exec_destroy(e);
    }
    for (CUgraph g : graph_) {
      if (g != nullptr) cu_.graph_destroy(g);
    }
  }

  // Captures rank r's launch of fn with `param` on `stream` and instantiates it. Empty or why not.
  std::string Capture(int r, CUstream stream, CUfunction fn, const ncclscope_moe_plan& p,
                      void* param) {
    const auto i = static_cast<size_t>(r);
    CUresult res = cu_.stream_begin_capture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (res != CUDA_SUCCESS) return "cuStreamBeginCapture: " + ErrorText(cu_, res);
    void* params[] = {param};
    const CUresult launched = cu_.launch_kernel(fn, static_cast<unsigned>(p.config.blocks), 1, 1,
                                                static_cast<unsigned>(p.config.threads), 1, 1, 0,
                                                stream, params, nullptr);
    res = cu_.stream_end_capture(stream, &graph_[i]);
    if (launched != CUDA_SUCCESS)
      return "cuLaunchKernel under capture: " + ErrorText(cu_, launched);
    if (res != CUDA_SUCCESS) return "cuStreamEndCapture: " + ErrorText(cu_, res);
    res = cu_.graph_instantiate(&exec_[i], graph_[i], 0);
    return res == CUDA_SUCCESS ? "" : "cuGraphInstantiate: " + ErrorText(cu_, res);
  }

  // Replays every rank's graph on its stream and waits (the kernels' bounded wait plus a margin).
  // Empty or what failed; *hang when a kernel outlived its bounded wait.
  std::string Replay(LocalRanks& l, uint64_t timeout_ns, bool* hang) {
    for (int r = 0; r < l.nranks; ++r) {
      const CUresult res =
          cu_.graph_launch(exec_[static_cast<size_t>(r)], l.streams[static_cast<size_t>(r)]);
      if (res != CUDA_SUCCESS) return "cuGraphLaunch: " + ErrorText(cu_, res);
    }
    int stuck = -1;
    std::string why;
    if (!WaitKernels(cu_, l.streams.data(), l.nranks, timeout_ns, &stuck, &why)) {
      *hang = why == "timed out";
      return "rank " + std::to_string(stuck) + "'s replay: " + why;
    }
    for (int r = 0; r < l.nranks; ++r) {
      nc::KernelStall k{};
      if (!ReadStall(cu_, l.mem[static_cast<size_t>(r)], &k)) return "reading a stall record";
      if (k.code != 0) return "a replay stalled: " + StallText(k);
    }
    return "";
  }

 private:
  const Driver& cu_;
  std::vector<CUgraph> graph_;
  std::vector<CUgraphExec> exec_;
};

// Poisons every rank's outputs of the next dispatch (or combine) and zeroes the stall records.
std::string PoisonAll(const MoeCaseRun& x, bool dispatch) {
  for (size_t r = 0; r < x.dev.size(); ++r) {
    if (PoisonMoeOutputs(x.run.cu, x.plan, x.dev[r], dispatch) != CUDA_SUCCESS ||
        x.run.cu.memset_d8(x.ranks.mem[r].stall, 0, sizeof(nc::KernelStall)) != CUDA_SUCCESS) {
      return "poisoning the outputs failed";
    }
  }
  return x.run.cu.ctx_synchronize() == CUDA_SUCCESS ? "" : "cuCtxSynchronize failed";
}

// One replay of both graphs with fresh inputs, compared with the twins. Empty or what differs.
std::string ReplayOnce(MoeCaseRun& x, RankGraphs& dispatch, RankGraphs& combine, MoeTwinRanks& twin,
                       const Case& c, size_t index, int rep, bool* hang) {
  const int n = x.ranks.nranks;
  const uint64_t timeout_ns = x.run.o.timeout_ms * kMsToNs;
  x.in.clear();
  for (int r = 0; r < n; ++r) x.in.push_back(MakeMoeInput(c, x.run.o.seed, index, rep, r));
  std::string why = UploadMoeInputs(x);
  if (why.empty()) why = PoisonAll(x, true);
  if (why.empty()) why = dispatch.Replay(x.ranks, timeout_ns, hang);
  std::vector<MoeRankOutput> want;
  if (why.empty()) why = twin.Dispatch(0, x.in, &want);  // the twins' epochs: device epochs too
  for (int r = 0; r < n && why.empty(); ++r) {
    MoeRankOutput got;
    why = DownloadDispatch(x, r, &got)
              ? CompareDispatch(x.plan, r, got, want[static_cast<size_t>(r)])
              : "downloading the dispatch's outputs failed";
  }
  if (!why.empty()) return "dispatch: " + why;
  std::vector<std::vector<unsigned char>> expert_out(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const MoeRankOutput& w = want[static_cast<size_t>(r)];
    expert_out[static_cast<size_t>(r)].resize(
        static_cast<size_t>(ReceivedRows(w) * x.plan.row_bytes));
    ApplyExperts(x.plan, w.recv_x.data(), w.recv_counts.data(),
                 expert_out[static_cast<size_t>(r)].data());
  }
  why = UploadExpertRows(x, expert_out);
  if (why.empty()) why = PoisonAll(x, false);
  if (why.empty()) why = combine.Replay(x.ranks, timeout_ns, hang);
  if (why.empty()) why = twin.Combine(0, x.in, expert_out, &want);
  for (int r = 0; r < n && why.empty(); ++r) {
    MoeRankOutput got;
    why = DownloadCombine(x, r, &got) ? CompareCombine(x.plan, r, got, want[static_cast<size_t>(r)])
                                      : "downloading the combine's output failed";
  }
  return why.empty() ? "" : "combine: " + why;
}

}  // namespace

bool CheckMoeGraphReplay(RankCountRun& run, LocalRanks& ranks, Case c, int blocks, int runs) {
  const int n = ranks.nranks;
  const std::string head = "(a) " + std::to_string(n) + " ranks, moe under CUDA graphs: ";
  if (!run.cu.HasGraphs()) {
    run.summary->notes.push_back(head + "skipped (the driver has no stream capture)");
    return true;
  }
  c.moe.all_tokens = true;  // a graph replays its launch's token counts
  ncclscope_moe_config config = MoeConfig(c, blocks);
  MoeCaseRun x{run, ranks, {}, {}, {}};
  std::string why = ncclscope_moe_plan_make(&config, &x.plan) == NCCLSCOPE_MOE_OK
                        ? ""
                        : "no plan for " + CaseName(c);
  // Each run is two calls: the device epochs wrap halfway.
  const uint32_t first = 0u - static_cast<uint32_t>(runs);
  x.device_epoch = true;
  if (why.empty()) AllocateMoeDevice(x, first, &why);
  const size_t index = (*run.case_index)++;
  x.in.clear();
  for (int r = 0; r < n; ++r) x.in.push_back(MakeMoeInput(c, run.o.seed, index, 0, r));
  RankGraphs dispatch(run.cu, n), combine(run.cu, n);
  std::vector<ncclscope_moe_dispatch_args> d(static_cast<size_t>(n));
  std::vector<ncclscope_moe_combine_args> k(static_cast<size_t>(n));
  const uint64_t timeout_ns = run.o.timeout_ms * kMsToNs;
  for (int r = 0; r < n && why.empty(); ++r) {
    const auto i = static_cast<size_t>(r);
    const ncclscope_moe_common_args common = MoeCommonArgs(x, r, 0, timeout_ns);
    d[i] = MoeDispatchArgs(common, x.dev[i]);
    k[i] = MoeCombineArgs(common, x.dev[i]);
    why = dispatch.Capture(r, ranks.streams[i], run.kernels.moe_dispatch, x.plan, &d[i]);
    if (why.empty()) {
      why = combine.Capture(r, ranks.streams[i], run.kernels.moe_combine, x.plan, &k[i]);
    }
  }
  bool hang = false;
  int done = 0;
  {
    MoeTwinRanks twin(x.plan, first);
    twin.device_epoch = true;
    for (int rep = 0; rep < runs && why.empty(); ++rep, ++done) {
      why = ReplayOnce(x, dispatch, combine, twin, c, index, rep, &hang);
      if (!why.empty()) why = "run " + std::to_string(rep) + ": " + why;
    }
  }
  if (hang) {
    std::printf("HANG %d ranks, moe under CUDA graphs: %s\n", n, why.c_str());
    return false;
  }
  FreeMoeDevice(run.cu, &x.dev);
  if (!why.empty()) ++run.failures;
  run.summary->notes.push_back(
      head + CaseName(c) + ", dispatch and combine captured once a rank, " + std::to_string(done) +
      " replays with fresh inputs, epochs from the buffers across the wrap" +
      (why.empty() ? ": all right" : ": FAILED (" + why + ")"));
  return true;
}

}  // namespace ncclscope::gpu_check
