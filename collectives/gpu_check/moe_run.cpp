#include "collectives/gpu_check/moe_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "collectives/gpu_check/moe_cases.h"
#include "collectives/gpu_check/moe_compare.h"
#include "collectives/gpu_check/moe_definition.h"
#include "collectives/gpu_check/moe_device.h"
#include "collectives/gpu_check/moe_graph.h"
#include "collectives/gpu_check/moe_twin.h"
#include "collectives/gpu_check/run_limits.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

// Empty, or the first rank whose kernel stalled in a healthy run.
std::string Stalled(const LaunchOutcome& out) {
  for (const nc::KernelStall& k : out.stalls) {
    if (k.code != 0) {
      return "a healthy run stalled: " + StallText(k) + " (are all ranks' blocks co-resident?)";
    }
  }
  return "";
}

// The first difference of any rank, by rank.
template <typename Compare>
std::string FirstWrong(int n, Compare compare) {
  std::vector<std::string> wrong(static_cast<size_t>(n));
  OnEveryRank(n, [&](int r) { wrong[static_cast<size_t>(r)] = compare(r); });
  for (const std::string& w : wrong) {
    if (!w.empty()) return w;
  }
  return "";
}

// What one case gathers over its runs.
struct CaseTally {
  CaseResult dispatch, combine;
  MoeTraffic traffic;  // summed over the runs
  int counted = 0;
};

void Wrong(RankCountRun& run, CaseResult* result, int rep, uint32_t epoch, const std::string& why) {
  ++result->wrong;
  ++run.failures;
  if (result->wrong == 1) {
    std::printf("WRONG %d ranks, %s, run %d (epoch %#x): %s\n", result->c.nranks,
                CaseName(result->c).c_str(), rep, epoch, why.c_str());
  }
}

void Timed(const LaunchOutcome& out, CaseResult* result) {
  result->launch_us.insert(result->launch_us.end(), out.launch_us.begin(), out.launch_us.end());
  result->kernel_us.push_back(out.last_rank_kernel_us);
}

// --self-test-corrupt: one byte in the middle of the first received row of the first rank that
// received one, so the comparison must name it.
void Corrupt(std::vector<MoeRankOutput>& got, const ncclscope_moe_plan& p) {
  for (MoeRankOutput& o : got) {
    if (ReceivedRows(o) == 0 || o.recv_x.empty()) continue;
    o.recv_x[static_cast<size_t>(p.row_bytes) / 2] ^= 0x01;
    return;
  }
}

// The combine half of a run, after a right dispatch whose outputs `want` holds. False on a hang.
bool RunCombine(MoeCaseRun& x, MoeTwinRanks& twin, int rep, uint32_t epoch,
                std::vector<MoeRankOutput>& want, CaseTally* t) {
  const int n = x.ranks.nranks;
  std::vector<std::vector<unsigned char>> expert_out(static_cast<size_t>(n));
  OnEveryRank(n, [&](int r) {
    const MoeRankOutput& w = want[static_cast<size_t>(r)];
    auto& e = expert_out[static_cast<size_t>(r)];
    e.resize(static_cast<size_t>(ReceivedRows(w)) * static_cast<size_t>(x.plan.row_bytes));
    ApplyExperts(x.plan, w.recv_x.data(), w.recv_counts.data(), e.data());
  });
  std::string wrong = UploadExpertRows(x, expert_out);
  LaunchOutcome out;
  if (wrong.empty()) {
    out = LaunchMoe(x, false, epoch, x.run.o.timeout_ms * kMsToNs, -1);
    ++t->combine.runs;
    if (out.hang) {
      std::printf("HANG %d ranks, %s, run %d: %s\n", n, CaseName(t->combine.c).c_str(), rep,
                  out.error.c_str());
      return false;
    }
    wrong = out.error.empty() ? Stalled(out) : out.error;
  }
  if (wrong.empty()) wrong = twin.Combine(epoch, x.in, expert_out, &want);
  if (wrong.empty()) {
    wrong = FirstWrong(
        n, [&](int r) { return CombineAgainstDefinition(x.plan, x.in, expert_out, want, r); });
  }
  std::vector<MoeRankOutput> got(static_cast<size_t>(n));
  for (int r = 0; r < n && wrong.empty(); ++r) {
    if (!DownloadCombine(x, r, &got[static_cast<size_t>(r)])) {
      wrong = "downloading rank " + std::to_string(r) + "'s combine outputs failed";
    }
  }
  if (wrong.empty()) {
    wrong = FirstWrong(n, [&](int r) {
      return CompareCombine(x.plan, r, got[static_cast<size_t>(r)], want[static_cast<size_t>(r)]);
    });
  }
  if (!wrong.empty()) {
    Wrong(x.run, &t->combine, rep, epoch, wrong);
    ResetMoeFlags(x, epoch);
    twin.ResetFlags(epoch);
    return true;
  }
  Timed(out, &t->combine);
  return true;
}

// One run: fresh inputs, dispatch, the experts, combine (epochs `epoch` and `epoch + 1`), each
// compared with the twins. False on a hang.
bool RunOnce(MoeCaseRun& x, MoeTwinRanks& twin, const Case& c, size_t index, int rep,
             uint32_t epoch, CaseTally* t) {
  RankCountRun& run = x.run;
  const int n = x.ranks.nranks;
  // Every other run as a captured CUDA graph would replay it: the kernels take their epochs from
  // their buffers (NCCLSCOPE_MOE_DEVICE_EPOCH), on the device and in the twins alike.
  x.device_epoch = twin.device_epoch = rep % 2 == 1;
  x.in.assign(static_cast<size_t>(n), MoeRankInput{});
  OnEveryRank(
      n, [&](int r) { x.in[static_cast<size_t>(r)] = MakeMoeInput(c, run.o.seed, index, rep, r); });
  const MoeTraffic traffic = CountTraffic(c, x.in);
  t->traffic.logical += traffic.logical;
  t->traffic.dispatch_device += traffic.dispatch_device;
  t->traffic.combine_device += traffic.combine_device;
  ++t->counted;
  std::string wrong = UploadMoeInputs(x);
  LaunchOutcome out;
  if (wrong.empty()) {
    out = LaunchMoe(x, true, epoch, run.o.timeout_ms * kMsToNs, -1);
    ++t->dispatch.runs;
    if (out.hang) {
      std::printf("HANG %d ranks, %s, run %d: %s\n", n, CaseName(c).c_str(), rep,
                  out.error.c_str());
      return false;
    }
    wrong = out.error.empty() ? Stalled(out) : out.error;
  }
  std::vector<MoeRankOutput> want, got(static_cast<size_t>(n));
  if (wrong.empty()) wrong = twin.Dispatch(epoch, x.in, &want);
  if (wrong.empty()) {
    wrong = FirstWrong(n, [&](int r) { return DispatchAgainstDefinition(x.plan, x.in, want, r); });
  }
  for (int r = 0; r < n && wrong.empty(); ++r) {
    if (!DownloadDispatch(x, r, &got[static_cast<size_t>(r)])) {
      wrong = "downloading rank " + std::to_string(r) + "'s dispatch outputs failed";
    }
  }
  if (wrong.empty()) {
    if (run.o.self_test_corrupt && !run.moe_corrupted) {
      Corrupt(got, x.plan);
      run.moe_corrupted = true;
    }
    wrong = FirstWrong(n, [&](int r) {
      return CompareDispatch(x.plan, r, got[static_cast<size_t>(r)], want[static_cast<size_t>(r)]);
    });
  }
  if (!wrong.empty()) {
    // No combine: its epoch goes unused, every flag set as after it.
    Wrong(run, &t->dispatch, rep, epoch, wrong);
    ResetMoeFlags(x, epoch + 1);
    twin.ResetFlags(epoch + 1);
    return true;
  }
  Timed(out, &t->dispatch);
  return RunCombine(x, twin, rep, epoch + 1, want, t);
}

// The case's runs, its rows added to the summary. False on a hang.
bool RunCase(RankCountRun& run, LocalRanks& ranks, const Case& c, int blocks, int* calls) {
  CaseTally t;
  ncclscope_moe_config config = MoeConfig(c, blocks);
  ncclscope_moe_plan plan{};
  const ncclscope_moe_result made = ncclscope_moe_plan_make(&config, &plan);
  t.dispatch.c = c;
  t.dispatch.c.blocks = static_cast<uint32_t>(plan.config.blocks);
  t.dispatch.c.threads = static_cast<uint32_t>(plan.config.threads);
  t.combine.c = t.dispatch.c;
  t.combine.c.op = Op::kMoeCombine;
  MoeCaseRun x{run, ranks, plan, {}, {}};
  // Two calls a run: the epoch wraps after half of them.
  const uint32_t first = 0u - static_cast<uint32_t>(c.reps);
  std::string error = made == NCCLSCOPE_MOE_OK ? "" : ncclscope_moe_result_string(made);
  if (error.empty()) AllocateMoeDevice(x, first, &error);
  if (!error.empty()) {
    std::printf("FAIL %d ranks, %s: %s\n", c.nranks, CaseName(c).c_str(), error.c_str());
    FreeMoeDevice(run.cu, &x.dev);
    ++run.failures;
    t.dispatch.wrong = 1;
    run.summary->cases.push_back(t.dispatch);
    return true;
  }
  const size_t index = (*run.case_index)++;
  {
    MoeTwinRanks twin(plan, first);
    uint32_t epoch = first;
    for (int rep = 0; rep < c.reps; ++rep, epoch += 2, *calls += 2) {
      if (!RunOnce(x, twin, c, index, rep, epoch, &t)) return false;
    }
  }
  FreeMoeDevice(run.cu, &x.dev);
  if (t.counted > 0) {
    t.dispatch.c.bytes = static_cast<size_t>(t.traffic.logical / t.counted);
    t.combine.c.bytes = t.dispatch.c.bytes;
    t.dispatch.c.moe.device_bytes = t.traffic.dispatch_device / t.counted;
    t.combine.c.moe.device_bytes = t.traffic.combine_device / t.counted;
  }
  run.summary->cases.push_back(t.dispatch);
  run.summary->cases.push_back(t.combine);
  return true;
}

// The last rank never launches its dispatch; every other rank's must return with
// NCCLSCOPE_MOE_TIMEOUT naming it in its status and its stall record, at the start barrier of
// epoch 0 whose flag still holds 0xffffffff (the wrap). False on a hang.
bool CheckAbsentRank(RankCountRun& run, LocalRanks& ranks, const Case& c, int blocks) {
  const int n = ranks.nranks, absent = n - 1;
  ncclscope_moe_config config = MoeConfig(c, blocks);
  ncclscope_moe_plan plan{};
  MoeCaseRun x{run, ranks, plan, {}, {}};
  constexpr uint32_t kEpoch = 0;
  std::string error;
  if (ncclscope_moe_plan_make(&config, &x.plan) != NCCLSCOPE_MOE_OK) error = "no plan";
  if (error.empty()) AllocateMoeDevice(x, kEpoch, &error);
  const size_t index = (*run.case_index)++;
  for (int r = 0; r < n; ++r) x.in.push_back(MakeMoeInput(c, run.o.seed, index, 0, r));
  if (error.empty()) error = UploadMoeInputs(x);
  int named = 0;
  if (error.empty()) {
    const LaunchOutcome out = LaunchMoe(x, true, kEpoch, run.o.stall_timeout_ms * kMsToNs, absent);
    if (out.hang) {
      std::printf(
          "HANG %d ranks, moe dispatch, absent rank %d: %s: the bounded wait did not end "
          "a kernel\n",
          n, absent, out.error.c_str());
      return false;
    }
    error = out.error;
    for (int r = 0; r < absent && error.empty(); ++r) {
      MoeRankOutput o;
      if (!DownloadDispatch(x, r, &o)) {
        error = "downloading rank " + std::to_string(r) + "'s status failed";
        break;
      }
      const nc::KernelStall& k = out.stalls[static_cast<size_t>(r)];
      const ncclscope_moe_status& s = o.dispatch_status;
      const bool right = s.code == NCCLSCOPE_MOE_TIMEOUT && s.rank == r && s.detail == absent &&
                         k.code == 1 && k.rank == r && k.peer == absent &&
                         k.barrier == static_cast<uint32_t>(nc::Barrier::kStart) &&
                         k.want == kEpoch && k.seen == kEpoch - 1;
      std::printf("  absent rank %d, moe dispatch: status %s; %s%s\n", absent,
                  StatusText(s).c_str(), k.code != 0 ? StallText(k).c_str() : "no stall record",
                  right ? "" : "  <- WRONG");
      named += right ? 1 : 0;
    }
  }
  FreeMoeDevice(run.cu, &x.dev);
  const bool ok = error.empty() && named == absent;
  if (!ok) ++run.failures;
  run.summary->notes.push_back(
      "(a) " + std::to_string(n) + " ranks, rank " + std::to_string(absent) +
      " never launched its moe dispatch: " +
      (ok ? "all " + std::to_string(absent) + " others returned a timeout and named it"
          : "FAILED (" +
                (error.empty()
                     ? std::to_string(named) + " of " + std::to_string(absent) + " named it"
                     : error) +
                ")"));
  return true;
}

// Blocks a rank: the plan's default (0) unless every rank's grid together would not fit the device.
int CoResidentBlocks(const RankCountRun& run, int nranks) {
  ncclscope_moe_config config{};
  config.nranks = nranks;
  config.num_experts = nranks;
  config.top_k = 1;
  config.hidden = 8;
  config.dtype = NCCLSCOPE_MOE_FP32;
  config.max_tokens = 1;
  ncclscope_moe_plan plan{};
  if (ncclscope_moe_plan_make(&config, &plan) != NCCLSCOPE_MOE_OK) return 0;
  const auto threads = static_cast<uint32_t>(plan.config.threads);
  int regs = 0;
  const int capacity =
      std::min(DeviceCapacity(run.cu, run.facts, run.kernels.moe_dispatch, threads, &regs),
               DeviceCapacity(run.cu, run.facts, run.kernels.moe_combine, threads, &regs));
  if (capacity <= 0 || plan.config.blocks * nranks <= capacity) return 0;
  return std::max(1, capacity / nranks);
}

// The summary's row of `op` for the DeepSeek shape with `tokens` a rank and combine mode
// `combine`; null when it did not run or was wrong.
const CaseResult* TimedRow(const Summary& s, int nranks, Op op, int tokens, int combine) {
  for (const CaseResult& r : s.cases) {
    if (r.c.op == op && r.c.nranks == nranks && r.c.moe.hidden == kDeepSeekHidden &&
        r.c.moe.max_tokens == tokens && r.c.moe.combine == combine && r.wrong == 0 &&
        !r.kernel_us.empty()) {
      return &r;
    }
  }
  return nullptr;
}

// Part (c)'s lines against the MoE targets (DeepEP's published intranode numbers).
void AddTargetNotes(Summary* s, int nranks) {
  constexpr int kExact = NCCLSCOPE_MOE_COMBINE_EXACT, kSums = NCCLSCOPE_MOE_COMBINE_RANK_SUMS;
  char line[400];
  const CaseResult* d = TimedRow(*s, nranks, Op::kMoeDispatch, kLowLatencyTokens, kExact);
  const CaseResult* c = TimedRow(*s, nranks, Op::kMoeCombine, kLowLatencyTokens, kExact);
  const CaseResult* sums = TimedRow(*s, nranks, Op::kMoeCombine, kLowLatencyTokens, kSums);
  if (d != nullptr && c != nullptr && sums != nullptr) {
    std::snprintf(line, sizeof(line),
                  "(c) moe, %d ranks, %d tokens a rank, hidden %d, top-%d, bf16 (low-latency "
                  "shape): dispatch %.1f us (target <= 60), combine %.1f us, with rank sums %.1f "
                  "us (target <= 80)",
                  nranks, kLowLatencyTokens, kDeepSeekHidden, kDeepSeekTopK, Median(d->kernel_us),
                  Median(c->kernel_us), Median(sums->kernel_us));
    s->notes.push_back(line);
  }
  d = TimedRow(*s, nranks, Op::kMoeDispatch, kHighThroughputTokens, kExact);
  c = TimedRow(*s, nranks, Op::kMoeCombine, kHighThroughputTokens, kExact);
  sums = TimedRow(*s, nranks, Op::kMoeCombine, kHighThroughputTokens, kSums);
  if (d != nullptr && c != nullptr && sums != nullptr) {
    const double bytes = static_cast<double>(d->c.bytes);
    std::snprintf(line, sizeof(line),
                  "(c) moe, %d ranks, %d tokens a rank, hidden %d, top-%d, bf16: dispatch %.1f "
                  "GB/s, combine %.1f GB/s, with rank sums %.1f GB/s per rank, logical as DeepEP "
                  "counts (target >= 300)",
                  nranks, kHighThroughputTokens, kDeepSeekHidden, kDeepSeekTopK,
                  bytes / (Median(d->kernel_us) * 1e3), bytes / (Median(c->kernel_us) * 1e3),
                  bytes / (Median(sums->kernel_us) * 1e3));
    s->notes.push_back(line);
  }
  s->notes.push_back(
      "(c) moe rows: bytes = the logical bytes a rank receives as DeepEP counts them (a row per "
      "token and destination rank, its own included), so algbw is DeepEP's GB/s per GPU; the "
      "simulated ranks share this one device's HBM and SMs: not an NVLink number");
}

}  // namespace

bool RunMoe(RankCountRun& run, LocalRanks& ranks, bool largest) {
  const int n = ranks.nranks;
  const std::vector<Case> cases = BuildMoeCases(n, largest, run.o.limits);
  const int blocks = CoResidentBlocks(run, n);
  const auto started = std::chrono::steady_clock::now();
  int calls = 0;
  for (const Case& c : cases) {
    if (!RunCase(run, ranks, c, blocks, &calls)) return false;
  }
  std::printf(
      "(a) %d ranks, moe: %zu cases, %d calls, each case's epochs wrapping, %s, %.1f s\n", n,
      cases.size(), calls,
      blocks == 0 ? "the plan's blocks" : ("blocks lowered to " + std::to_string(blocks)).c_str(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  std::fflush(stdout);
  // The graph replays: four runs of the first (smallest) case, its epochs wrapping halfway.
  if (!cases.empty() && !CheckMoeGraphReplay(run, ranks, cases.front(), blocks, 4)) return false;
  if (run.o.stall_timeout_ms > 0 && !cases.empty() &&
      !CheckAbsentRank(run, ranks, cases.front(), blocks)) {
    return false;
  }
  if (largest) AddTargetNotes(run.summary, n);
  // The other kernels' absent-rank check reads these records next: leave them zeroed.
  for (const DeviceRank& m : ranks.mem) {
    if (run.cu.memset_d8(m.stall, 0, sizeof(nc::KernelStall)) != CUDA_SUCCESS) {
      std::printf("FAIL %d ranks, moe: zeroing the stall records failed\n", n);
      ++run.failures;
      break;
    }
  }
  return true;
}

}  // namespace ncclscope::gpu_check
