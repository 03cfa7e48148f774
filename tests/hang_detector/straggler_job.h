// The synthetic training job of the straggler tests (step_model.h): world plus tensor-parallel
// pairs {0,1} {2,3} ... and two data-parallel groups (even ranks, odd ranks). Each step, after its
// compute, every rank issues an allreduce on its tp pair, one on its dp group and one on world.
// Not thread-safe.
#pragma once

#include <vector>

#include "hang_detector/verdicts/verdict_text.h"
#include "tests/hang_detector/analyze_helpers.h"
#include "tests/hang_detector/step_model.h"

namespace ncclscope::testing {

struct StragglerJob {
  // The model writes into `job`: neither may move.
  StragglerJob(const StragglerJob&) = delete;
  StragglerJob& operator=(const StragglerJob&) = delete;
  explicit StragglerJob(int n, uint32_t seed = 1) : ranks(n), job(n), model(&job, n, seed) {
    std::vector<int> all;
    for (int r = 0; r < n; ++r) all.push_back(r);
    world = job.Comm("world", all);
    for (int g = 0; g < n / 2; ++g) groups.push_back({2 * g, 2 * g + 1});
    for (int parity = 0; parity < 2; ++parity) {
      std::vector<int> dp;
      for (int r = parity; r < n; r += 2) dp.push_back(r);
      groups.push_back(dp);
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      const bool tp = g < static_cast<size_t>(n / 2);
      ids.push_back(job.Comm(tp ? "tp" : "dp", groups[g], world, tp ? 0 : 1));
    }
  }
  // `steps` steps; `transfer_s` is the world allreduce's transfer time (the groups' are halves).
  // With `nvtx`, each step's collectives carry its number as their NVTX step.
  void Run(int steps, double transfer_s = 0.001, uint64_t world_count = 256, bool nvtx = false) {
    for (int s = 0; s < steps; ++s) RunStep(nvtx ? model.Steps() : -1, transfer_s, world_count);
  }
  // One step of the model whose collectives carry NVTX step `nvtx_step` (none when negative).
  void RunStep(int nvtx_step, double transfer_s = 0.001, uint64_t world_count = 256) {
    std::vector<ModelOp> ops;
    std::vector<std::vector<int>> members;
    for (size_t g = 0; g < groups.size(); ++g) {
      ops.push_back({ids[g], OpType::kAllReduce, transfer_s / 2});
      members.push_back(groups[g]);
    }
    std::vector<int> all;
    for (int r = 0; r < ranks; ++r) all.push_back(r);
    ops.push_back({world, OpType::kAllReduce, transfer_s, world_count});
    members.push_back(all);
    model.nvtx_step = nvtx_step;
    model.Step(ops, members);
  }
  Analysis Analyze() {
    job.HeartbeatAll(model.Now());
    return AnalyzeAt(job, model.Now() + 0.01);
  }

  int ranks;
  JobBuilder job;
  StepModel model;
  uint64_t world = 0;
  std::vector<std::vector<int>> groups;
  std::vector<uint64_t> ids;
};

inline std::vector<Verdict> Stragglers(const Analysis& a) {
  std::vector<Verdict> out;
  for (const Verdict& v : a.verdicts) {
    if (v.cls == VerdictClass::kStraggler) out.push_back(v);
  }
  return out;
}

}  // namespace ncclscope::testing
