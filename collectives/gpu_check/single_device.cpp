#include "collectives/gpu_check/single_device.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "collectives/gpu_check/exchange_group.h"
#include "collectives/gpu_check/exchange_run.h"
#include "collectives/gpu_check/local_ranks.h"
#include "collectives/gpu_check/moe_run.h"
#include "collectives/gpu_check/open_device.h"
#include "collectives/gpu_check/rank_count_run.h"
#include "collectives/gpu_check/report.h"
#include "collectives/gpu_check/run_limits.h"
#include "collectives/gpu_check/test_data.h"
#include "collectives/gpu_check/twin_reference.h"
#include "collectives/twins/bounded_wait.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

constexpr int kCopyReps = 5;

// Reads + writes per second of a device-to-device copy of `bytes`: the ceiling the kernels' own
// traffic is compared with. Timed with events on a stream; the emulator has no asynchronous copy,
// so there the host clock times the synchronous one.
double MeasureCopy(const Driver& cu, size_t bytes, std::string* how) {
  CUdeviceptr a = 0, b = 0;
  if (cu.mem_alloc(&a, bytes) != CUDA_SUCCESS || cu.mem_alloc(&b, bytes) != CUDA_SUCCESS) {
    if (a != 0) cu.mem_free(a);
    *how = "no device memory for the copy";
    return -1;
  }
  cu.memset_d8(a, 1, bytes);
  cu.ctx_synchronize();
  CUstream s = nullptr;
  CUevent e0 = nullptr, e1 = nullptr;
  std::vector<double> seconds;
  const bool events = cu.memcpy_dtod_async != nullptr &&
                      cu.stream_create(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS &&
                      cu.event_create(&e0, 0) == CUDA_SUCCESS &&
                      cu.event_create(&e1, 0) == CUDA_SUCCESS;
  for (int i = 0; i <= kCopyReps; ++i) {  // the first is a warm-up
    if (events) {
      cu.event_record(e0, s);
      cu.memcpy_dtod_async(b, a, bytes, s);
      cu.event_record(e1, s);
      float ms = 0;
      if (cu.event_synchronize(e1) != CUDA_SUCCESS ||
          cu.event_elapsed_time(&ms, e0, e1) != CUDA_SUCCESS) {
        break;
      }
      if (i > 0) seconds.push_back(ms / 1e3);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      cu.memcpy_dtod(b, a, bytes);
      cu.ctx_synchronize();
      const auto t1 = std::chrono::steady_clock::now();
      if (i > 0) seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
  }
  cu.mem_free(a);
  cu.mem_free(b);
  const double t = Median(seconds);
  *how = (bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB, "
                              : std::to_string(bytes) + " bytes, ") +
         (events ? "cuMemcpyDtoDAsync timed by cuEvent" : "cuMemcpyDtoD timed by the host clock") +
         ", median of " + std::to_string(kCopyReps);
  return t > 0 ? 2.0 * static_cast<double>(bytes) / t / 1e9 : -1;
}

// Every rank's input, in parallel past a megabyte (the check is bound by the host there).
void FillInputs(const Case& c, uint64_t seed, size_t index, int rep,
                std::vector<std::vector<unsigned char>>& in) {
  auto one = [&](int r) {
    FillInput(c, seed, index, rep, r, in[static_cast<size_t>(r)].data(), c.bytes);
  };
  if (c.bytes < (1u << 20)) {
    for (int r = 0; r < c.nranks; ++r) one(r);
    return;
  }
  std::vector<std::thread> t;
  for (int r = 0; r < c.nranks; ++r) t.emplace_back(one, r);
  for (std::thread& x : t) x.join();
}

std::vector<const unsigned char*> Pointers(const std::vector<std::vector<unsigned char>>& v) {
  std::vector<const unsigned char*> p;
  for (const auto& x : v) p.push_back(x.data());
  return p;
}

// Whether this rank count runs the MoE cases (--moe, --moe-ranks).
bool RunsMoe(const Options& o, int nranks) {
  return o.moe && (o.moe_ranks.empty() ||
                   std::find(o.moe_ranks.begin(), o.moe_ranks.end(), nranks) != o.moe_ranks.end());
}

// The largest rank count that runs the MoE cases: it also gets their high-throughput shape.
int LargestMoeRanks(const Options& o) {
  int largest = 0;
  for (int n : o.ranks) largest = RunsMoe(o, n) ? std::max(largest, n) : largest;
  return largest;
}

// Every case of one rank count, then the absent-rank check. Returns false on a hang.
bool RunRankCount(RankCountRun& run, int nranks) {
  const Driver& cu = run.cu;
  const Options& o = run.o;
  std::vector<Case> cases = BuildCases(run.facts.gpu, nranks, o.limits);
  size_t bytes = nc::kPackBytes * (37 * static_cast<size_t>(nranks) + 5);  // the stall check's
  for (Case& c : cases) {
    bytes = std::max(bytes, c.bytes);
    int regs = 0;
    const int capacity = DeviceCapacity(cu, run.facts, run.kernels.Of(c), c.threads, &regs);
    if (capacity > 0 && static_cast<int>(c.blocks) * nranks > capacity) {
      c.blocks = static_cast<uint32_t>(std::max(1, capacity / nranks));
    }
  }
  // The exchange's groups need more device memory than small cases do; the host's copies of the
  // other cases' buffers stay at what those need.
  const size_t device_bytes = std::max(bytes, ExchangeBytesNeeded(run.facts.gpu, nranks));
  const uint32_t first_epoch = 0u - o.wrap_after;
  LocalRanks ranks;
  std::string error;
  if (!SetUpLocalRanks(cu, nranks, device_bytes, first_epoch, &ranks, &error)) {
    std::printf("FAIL %d ranks: %s\n", nranks, error.c_str());
    TearDownLocalRanks(cu, &ranks);
    ++run.failures;
    return true;
  }
  TwinRanks twin(nranks, bytes, first_epoch);
  std::vector<std::vector<unsigned char>> in(nranks, std::vector<unsigned char>(bytes)),
      want(nranks, std::vector<unsigned char>(bytes));
  std::vector<unsigned char> got(bytes);
  std::vector<unsigned char*> want_ptr;
  for (auto& w : want) want_ptr.push_back(w.data());
  uint32_t epoch = first_epoch;
  int calls = 0;
  const auto started = std::chrono::steady_clock::now();
  for (const Case& c : cases) {
    CaseResult result;
    result.c = c;
    const size_t index = (*run.case_index)++;
    for (int rep = 0; rep < c.reps; ++rep, ++epoch, ++calls) {
      FillInputs(c, o.seed, index, rep, in);
      const auto inputs = Pointers(in);
      const LaunchOutcome out =
          LaunchAll(cu, run.kernels, ranks, c, inputs.data(), epoch, o.timeout_ms * kMsToNs, -1);
      ++result.runs;
      if (out.hang) {
        std::printf("HANG %d ranks, %s, %zu bytes, run %d: %s\n", nranks, CaseName(c).c_str(),
                    c.bytes, rep, out.error.c_str());
        return false;
      }
      std::string wrong = out.error;
      for (int r = 0; r < nranks && wrong.empty(); ++r) {
        if (out.stalls[static_cast<size_t>(r)].code != 0) {
          wrong = "a healthy run stalled: " + StallText(out.stalls[static_cast<size_t>(r)]) +
                  " (are all ranks' blocks co-resident?)";
        }
      }
      // After a stall the flags disagree: start the next call from a clean state.
      if (!wrong.empty()) {
        for (const DeviceRank& m : ranks.mem) ResetRankFlags(cu, m, epoch);
      }
      std::string why;
      if (wrong.empty() && !twin.Run(c, inputs.data(), want_ptr.data(), &why)) wrong = why;
      for (int r = 0; r < nranks && wrong.empty(); ++r) {
        if (!DownloadOutput(cu, ranks, r, c.bytes, got.data())) {
          wrong = "downloading rank " + std::to_string(r) + "'s output failed";
          break;
        }
        if (o.self_test_corrupt && !*run.corrupted) {
          got[c.bytes / 2] ^= 0x01;  // the comparison below must see this
          *run.corrupted = true;
        }
        const std::string diff =
            FirstDifference(c, got.data(), want[static_cast<size_t>(r)].data(), c.bytes);
        if (!diff.empty()) wrong = "rank " + std::to_string(r) + ": " + diff;
      }
      if (!wrong.empty()) {
        ++result.wrong;
        ++run.failures;
        if (result.wrong == 1) {
          std::printf("WRONG %d ranks, %s, %zu bytes, run %d (epoch %#x): %s\n", nranks,
                      CaseName(c).c_str(), c.bytes, rep, epoch, wrong.c_str());
        }
        continue;
      }
      result.launch_us.insert(result.launch_us.end(), out.launch_us.begin(), out.launch_us.end());
      result.kernel_us.push_back(out.last_rank_kernel_us);
    }
    run.summary->cases.push_back(result);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("(a) %d ranks: %zu cases, %d calls, epochs %#x..%#x (%s), %.1f s\n", nranks,
              cases.size(), calls, first_epoch, epoch - 1,
              calls > static_cast<int>(o.wrap_after) ? "wrapped" : "did not wrap", seconds);
  std::fflush(stdout);
  if (!RunExchange(run, ranks, device_bytes)) return false;
  if (RunsMoe(o, nranks) && !RunMoe(run, ranks, nranks == LargestMoeRanks(o))) return false;

  // The bounded wait: the last rank never launches; every other kernel must return and say so.
  if (o.stall_timeout_ms > 0) {
    Case c;
    c.op = Op::kAllReduce;
    c.algorithm = nc::Algorithm::kOneShot;
    c.dtype = nc::Dtype::kFp32;
    c.nranks = nranks;
    c.bytes = nc::kPackBytes * (37 * static_cast<size_t>(nranks) + 5);
    c.packs = c.bytes / nc::kPackBytes;
    c.blocks = cases.empty() ? 36 : cases.front().blocks;
    c.threads = cases.empty() ? 512 : cases.front().threads;
    FillInputs(c, o.seed, (*run.case_index)++, 0, in);
    const auto inputs = Pointers(in);
    const int absent = nranks - 1;
    const LaunchOutcome out = LaunchAll(cu, run.kernels, ranks, c, inputs.data(), epoch,
                                        o.stall_timeout_ms * kMsToNs, absent);
    if (out.hang) {
      std::printf("HANG %d ranks, absent rank %d: %s: the bounded wait did not end a kernel\n",
                  nranks, absent, out.error.c_str());
      return false;
    }
    int named = 0;
    for (int r = 0; r < absent && out.error.empty(); ++r) {
      const nc::KernelStall& k = out.stalls[static_cast<size_t>(r)];
      const bool right = k.code == 1 && k.rank == r && k.peer == absent &&
                         k.barrier == static_cast<uint32_t>(nc::Barrier::kStart) &&
                         k.want == epoch && k.seen == epoch - 1;
      std::printf("  absent rank %d: %s%s\n", absent,
                  k.code != 0 ? StallText(k).c_str() : "no stall reported by rank ",
                  k.code != 0 ? (right ? "" : "  <- WRONG") : std::to_string(r).c_str());
      named += right ? 1 : 0;
    }
    const bool ok = out.error.empty() && named == absent;
    if (!ok) ++run.failures;
    run.summary->notes.push_back(
        "(a) " + std::to_string(nranks) + " ranks, rank " + std::to_string(absent) +
        " never launched: " +
        (ok ? "all " + std::to_string(absent) + " others returned and named it"
            : "FAILED (" +
                  (out.error.empty()
                       ? std::to_string(named) + " of " + std::to_string(absent) + " named it"
                       : out.error) +
                  ")"));
  }
  TearDownLocalRanks(cu, &ranks);
  return true;
}

}  // namespace

int DeviceCapacity(const Driver& cu, const DeviceFacts& f, CUfunction fn, uint32_t threads,
                   int* regs) {
  *regs = -1;
  if (cu.func_get_attribute != nullptr) {
    cu.func_get_attribute(regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
  }
  int per_sm = 0;
  if (f.sms < 0 || cu.occupancy_max_active_blocks == nullptr ||
      cu.occupancy_max_active_blocks(&per_sm, fn, static_cast<int>(threads), 0) != CUDA_SUCCESS) {
    return -1;
  }
  return per_sm * f.sms;
}

int RunSingleDevice(const Options& o, FILE* summary_out) {
  Driver cu;
  std::string error;
  DeviceFacts facts;
  if (!LoadDriver(&cu, &error) || !OpenDevice(cu, o.device, &facts, &error)) {
    std::printf("FAIL: %s\n", error.c_str());
    return 1;
  }
  std::printf("device %d: %s\n", o.device, facts.Describe().c_str());
  Kernels kernels;
  if (!LoadKernels(cu, &kernels, &error)) {
    std::printf("FAIL: %s\n", error.c_str());
    return 1;
  }
  Summary summary;
  summary.device = facts.Describe();
  summary.copy_gbps = MeasureCopy(cu, o.copy_bytes, &summary.copy_how);
  // What the launch shape needs on one device: every rank's blocks resident at once.
  // The exchange: 8 ranks each with a send and a receive for every rank, itself included: 16
  // parts of 4 blocks. MoE: the plan's default grid (include/ncclscope/moe.h).
  const Case probe[] = {
      {Op::kAllReduce, nc::Algorithm::kOneShot, nc::Dtype::kBf16, 8, 0, 0, 36, 512, true, 0},
      {Op::kAllReduce, nc::Algorithm::kTwoShot, nc::Dtype::kBf16, 8, 0, 0, 36, 512, true, 0},
      {Op::kAlltoAll, nc::Algorithm::kPull, nc::Dtype::kFp32, 8, 0, 0, 36, 512, true, 0},
      {Op::kExchange, nc::Algorithm::kExchange, nc::Dtype::kFp32, 8, 0, 0, 64, 512, true, 0},
      {Op::kMoeDispatch, nc::Algorithm::kNccl, nc::Dtype::kBf16, 8, 0, 0, 32, 512, true, 0},
      {Op::kMoeCombine, nc::Algorithm::kNccl, nc::Dtype::kBf16, 8, 0, 0, 32, 512, true, 0}};
  for (const Case& c : probe) {
    int regs = 0;
    const int capacity = DeviceCapacity(cu, facts, kernels.Of(c), c.threads, &regs);
    const int need = 8 * static_cast<int>(c.blocks);
    const char* lowered =
        c.op == Op::kExchange ? "blocks per part lowered to fit" : "lowered to capacity / ranks";
    char line[256];
    if (capacity < 0) {
      std::snprintf(line, sizeof(line),
                    "co-residency %s: unknown (the driver reports no occupancy); 8 ranks x %u "
                    "blocks of 512 need %d resident blocks",
                    KernelName(c), c.blocks, need);
    } else {
      std::snprintf(line, sizeof(line),
                    "co-residency %s: %d registers, %d blocks of 512 per SM x %d SMs = %d resident "
                    "blocks; 8 ranks x %u need %d (%s)",
                    KernelName(c), regs, capacity / facts.sms, facts.sms, capacity, c.blocks, need,
                    capacity >= need ? "fits" : lowered);
    }
    summary.notes.push_back(line);
    std::printf("%s\n", line);
  }
  int failures = 0;
  size_t case_index = 0;
  bool corrupted = false;
  RankCountRun run{cu, kernels, o, facts, &summary, &case_index, &corrupted};
  for (int n : o.ranks) {
    if (!RunRankCount(run, n)) return 3;
  }
  failures += run.failures;
  int runs = 0, wrong = 0;
  for (const CaseResult& r : summary.cases) {
    runs += r.runs;
    wrong += r.wrong;
  }
  summary.notes.insert(summary.notes.begin(),
                       "(a) one device: " + std::to_string(summary.cases.size()) + " cases, " +
                           std::to_string(runs) + " runs, " + std::to_string(wrong) +
                           " wrong, bitwise against the CPU twins; epoch counter wraps after " +
                           std::to_string(o.wrap_after) + " calls of each rank count");
  std::fflush(stdout);
  PrintSummary(summary, summary_out != nullptr ? summary_out : stdout);
  return failures == 0 ? 0 : 1;
}

}  // namespace ncclscope::gpu_check
