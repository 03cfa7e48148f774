#include "collectives/gpu_check/cases.h"

#include <algorithm>

#include "collectives/include/ncclscope/moe.h"
#include "collectives/planner/allreduce_kernel_args.h"
#include "collectives/planner/alltoall_kernel_args.h"
#include "collectives/planner/alltoall_plan.h"
#include "collectives/planner/exchange_kernel_args.h"
#include "collectives/planner/planner.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

constexpr size_t kPack = nc::kPackBytes;
constexpr int32_t kNcclInt8 = 0;

int RepsFor(size_t bytes, const CaseLimits& l) {
  return bytes > l.big_bytes ? l.big_reps : l.reps;
}

// The AllReduce sizes that matter for this row: one pack, a small count that divides neither by
// the ranks nor by blocks x threads, and each edge of one-shot and two-shot (last one-shot size,
// first two-shot size, an uneven two-shot size, last two-shot size).
std::vector<size_t> AllReduceSizes(const nc::TuningRow& row, int nranks) {
  const size_t one = row.one_shot_max_bytes, two = row.two_shot_max_bytes;
  std::vector<size_t> s = {kPack, kPack * (37 * static_cast<size_t>(nranks) + 5), one - kPack};
  if (one < two) {
    s.push_back(one);
    s.push_back(one + kPack * 13);
    s.push_back(two - kPack);
  }
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

}  // namespace

std::vector<Case> BuildCases(nc::GpuClass gpu, int nranks, const CaseLimits& limits) {
  if (gpu == nc::GpuClass::kUnknown) gpu = nc::GpuClass::kHopper;
  std::vector<Case> cases;
  const nc::TuningRow* row = nc::FindTuning(gpu, nranks);
  const nc::Dtype dtypes[] = {nc::Dtype::kFp32, nc::Dtype::kFp16, nc::Dtype::kBf16};
  if (row != nullptr) {
    for (size_t bytes : AllReduceSizes(*row, nranks)) {
      if (bytes > limits.max_bytes) continue;
      for (nc::Dtype d : dtypes) {
        nc::AllReduceCall call;
        call.nccl_dtype = static_cast<int32_t>(d);
        call.count = bytes / nc::DtypeBytes(d);
        call.nranks = nranks;
        call.single_node = true;
        call.peers_reachable = true;
        call.gpu = gpu;
        const nc::AllReducePlan plan = nc::PlanAllReduce(call);
        if (plan.algorithm == nc::Algorithm::kNccl) continue;
        Case c;
        c.op = Op::kAllReduce;
        c.algorithm = plan.algorithm;
        c.dtype = d;
        c.nranks = nranks;
        c.bytes = bytes;
        c.packs = plan.packs;
        c.blocks = plan.blocks;
        c.threads = plan.threads;
        c.reps = RepsFor(bytes, limits);
        cases.push_back(c);
        if (bytes <= limits.force_other_max) {
          c.algorithm = plan.algorithm == nc::Algorithm::kOneShot ? nc::Algorithm::kTwoShot
                                                                  : nc::Algorithm::kOneShot;
          c.planned = false;
          cases.push_back(c);
        }
      }
    }
  }
  const nc::AlltoAllTuningRow* a2a = nc::FindAlltoAllTuning(gpu, nranks);
  if (a2a != nullptr) {
    const size_t n = static_cast<size_t>(nranks);
    const size_t largest = (a2a->max_bytes - 1) / n / kPack * kPack;  // below the row's limit
    for (size_t per_peer : {kPack, kPack * 37, largest}) {
      if (per_peer * n > limits.max_bytes) continue;
      nc::AlltoAllCall call;
      call.nccl_dtype = kNcclInt8;
      call.count = per_peer;
      call.nranks = nranks;
      call.single_node = true;
      call.peers_reachable = true;
      call.gpu = gpu;
      const nc::AlltoAllPlan plan = nc::PlanAlltoAll(call);
      if (plan.algorithm != nc::Algorithm::kPull) continue;
      Case c;
      c.op = Op::kAlltoAll;
      c.algorithm = nc::Algorithm::kPull;
      c.nranks = nranks;
      c.bytes = plan.bytes;
      c.packs = plan.packs_per_peer;
      c.blocks = plan.blocks;
      c.threads = plan.threads;
      c.reps = RepsFor(plan.bytes, limits);
      cases.push_back(c);
    }
  }
  return cases;
}

const char* KernelName(const Case& c) {
  if (c.op == Op::kAlltoAll) return nc::kAlltoAllKernelName;
  if (c.op == Op::kExchange) return nc::kExchangeKernelName;
  if (c.op == Op::kMoeDispatch) return NCCLSCOPE_MOE_DISPATCH_KERNEL;
  if (c.op == Op::kMoeCombine) return NCCLSCOPE_MOE_COMBINE_KERNEL;
  const int a = c.algorithm == nc::Algorithm::kOneShot ? 0 : 1;
  const int d = c.dtype == nc::Dtype::kFp16 ? 0 : c.dtype == nc::Dtype::kFp32 ? 1 : 2;
  return nc::kAllReduceKernelNames[a][d];
}

std::string CaseName(const Case& c) {
  if (c.op == Op::kAlltoAll) return "alltoall pull";
  if (c.op == Op::kExchange) {
    return c.pattern == ExchangePattern::kPipeline ? "exchange pipeline"
           : c.pattern == ExchangePattern::kSmall  ? "exchange a2av 1 chunk"
                                                   : "exchange a2av chunks";
  }
  if (c.op == Op::kMoeDispatch || c.op == Op::kMoeCombine) {
    return std::string(c.op == Op::kMoeDispatch ? "moe dispatch " : "moe combine ") +
           nc::DtypeName(c.dtype) + " h" + std::to_string(c.moe.hidden) + " k" +
           std::to_string(c.moe.top_k) + " t" + std::to_string(c.moe.max_tokens) +
           (c.moe.routing == MoeRouting::kSkewed ? " skew" : "") +
           (c.moe.combine != 0 ? " sums" : "");
  }
  return std::string("allreduce ") + nc::AlgorithmName(c.algorithm) + " " + nc::DtypeName(c.dtype);
}

double BytesMovedPerRank(const Case& c) {
  const double s = static_cast<double>(c.bytes), n = c.nranks;
  if (c.op == Op::kMoeDispatch || c.op == Op::kMoeCombine) return c.moe.device_bytes;
  if (c.op != Op::kAllReduce) return 4 * s;
  return c.algorithm == nc::Algorithm::kOneShot ? (n + 3) * s : 5 * s + s / n;
}

}  // namespace ncclscope::gpu_check
