#include "collectives/planner/tuning_table.h"

namespace ncclscope::collectives {
namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * kKiB;

// Blocks and threads: 36 blocks of 512 threads, vLLM's launch (csrc/custom_all_reduce.cuh: "36
// blocks near-optimal on A100/A10/A30/T4/V100; too many SMs cause contention"), kept for Hopper
// until measured. One-shot limits: vLLM's choice of its 1-stage kernel (custom_all_reduce.py:
// 1-stage if world size <= 4 and size < 512 KB, or <= 8 and < 256 KB; world size 2 always 1-stage).
// Two-shot limits: model-based estimate (two-shot's
// transfer floor on 8 ranks at 16 MB is 65-79 us against NCCL's measured 120-135 us, so it may
// beat NCCL up to and past 16 MB; capped at 64 MiB, vLLM's largest SM90 custom AllReduce size),
// not measured.
constexpr TuningRow kRows[] = {
    {GpuClass::kHopper, 2, 2, 64 * kMiB, 64 * kMiB, 36, 512,
     "one-shot: vLLM 1-stage always at world size 2, SM90 cap 64 MiB (published); not measured"},
    {GpuClass::kHopper, 3, 4, 512 * kKiB, 32 * kMiB, 36, 512,
     "one-shot < 512 KB: vLLM 1-stage rule (published); two-shot to 32 MiB: vLLM SM90 cap at 4 "
     "ranks (published); not measured"},
    {GpuClass::kHopper, 5, 8, 256 * kKiB, 64 * kMiB, 36, 512,
     "one-shot < 256 KB: vLLM 1-stage rule (published); two-shot to 64 MiB: model-based estimate "
     "(two-shot floor below NCCL's measured time at 16 MB); not measured"},
    {GpuClass::kAmpere, 2, 2, 8 * kMiB, 8 * kMiB, 36, 512,
     "one-shot: vLLM 1-stage always at world size 2, 8 MiB eager buffer (published); not measured"},
    {GpuClass::kAmpere, 3, 4, 512 * kKiB, 8 * kMiB, 36, 512,
     "one-shot < 512 KB: vLLM 1-stage rule; two-shot to vLLM's 8 MiB eager buffer (published); not "
     "measured"},
    {GpuClass::kAmpere, 5, 8, 256 * kKiB, 8 * kMiB, 36, 512,
     "one-shot < 256 KB: vLLM 1-stage rule; two-shot to vLLM's 8 MiB eager buffer (published); not "
     "measured"},
    // Blackwell (compute capability 10.x): vLLM caps its custom AllReduce far lower there
    // (vllm/distributed/device_communicators/all_reduce_utils.py, CUSTOM_ALL_REDUCE_MAX_SIZES
    // "10.0": 2 MiB at 2 and 4 ranks, 1 MiB at 6 and 8), since NVLink 5 and NCCL's own
    // small-message kernels (~3 us fixed cost on 8 x B200 with symmetric windows, nccl-tests#333)
    // leave less to win. Those caps are taken whole; the 1-stage rule as above. B300 (10.3) gets
    // larger caps in vLLM (4-8 MiB) but shares this row until measured.
    {GpuClass::kBlackwell, 2, 2, 2 * kMiB, 2 * kMiB, 36, 512,
     "one-shot: vLLM 1-stage always at world size 2, capped at vLLM's 2 MiB for sm_100 "
     "(published); not measured"},
    {GpuClass::kBlackwell, 3, 4, 512 * kKiB, 2 * kMiB, 36, 512,
     "one-shot < 512 KB: vLLM 1-stage rule; two-shot to vLLM's 2 MiB cap for sm_100 at 4 ranks "
     "(published); not measured"},
    {GpuClass::kBlackwell, 5, 8, 256 * kKiB, 1 * kMiB, 36, 512,
     "one-shot < 256 KB: vLLM 1-stage rule; two-shot to vLLM's 1 MiB cap for sm_100 at 6 and 8 "
     "ranks (published); not measured"},
};

// All-to-all, model-based estimates, not measured (docs/collectives.md).
// Past a few MB both NCCL and a pull over NVLink are bound by the link (NCCL's all-to-all reaches
// ~350-370 GB/s busBw), so what ncclscope can win is the fixed cost: ~6 us for the best custom
// kernels against NCCL's 15-35 us through the plain API, ~14 us. Copy-in spends it at 2S / HBM
// bandwidth (~4 TB/s on H100/H200: S = 28 MB; ~2 TB/s on A100: S = 14 MB). Capped at 8 MiB, below
// both and below the default 16 MiB staging buffer, since a 36-block pull's read rate over NVLink
// is not known. Launch: the AllReduce kernels' 36 x 512 (vLLM), kept until measured.
constexpr AlltoAllTuningRow kAlltoAllRows[] = {
    {GpuClass::kHopper, 2, 8, 8 * kMiB, 36, 512,
     "below 8 MiB: model-based estimate (NCCL's fixed cost against copy-in at HBM speed, "
     "crossover ~28 MB); launch 36x512 from vLLM's AllReduce (published); not measured"},
    {GpuClass::kAmpere, 2, 8, 8 * kMiB, 36, 512,
     "below 8 MiB: model-based estimate (NCCL's fixed cost against copy-in at HBM speed, "
     "crossover ~14 MB); launch 36x512 from vLLM's AllReduce (published); not measured"},
    // B200: HBM3e at ~8 TB/s makes copy-in cheaper, but NCCL's fixed cost is smaller too (~3 us
    // at best on 8 x B200, nccl-tests#333): a ~3 us gap gives S = 3 us x 8 TB/s / 2 = 12 MB, so
    // the same 8 MiB cap sits below the crossover even at NCCL's best.
    {GpuClass::kBlackwell, 2, 8, 8 * kMiB, 36, 512,
     "below 8 MiB: model-based estimate (NCCL's ~3 us fixed cost on 8 x B200 against copy-in at "
     "~8 TB/s, crossover ~12 MB); launch 36x512 from vLLM's AllReduce (published); not measured"},
};

}  // namespace

GpuClass GpuClassOf(int compute_major) noexcept {
  if (compute_major == 8) return GpuClass::kAmpere;
  if (compute_major == 9) return GpuClass::kHopper;
  if (compute_major == 10) return GpuClass::kBlackwell;
  return GpuClass::kUnknown;
}

const char* GpuClassName(GpuClass g) noexcept {
  switch (g) {
    case GpuClass::kAmpere:
      return "sm_80";
    case GpuClass::kHopper:
      return "sm_90";
    case GpuClass::kBlackwell:
      return "sm_100";
    case GpuClass::kUnknown:
      break;
  }
  return "unknown";
}

const TuningRow* FindTuning(GpuClass gpu, int nranks) noexcept {
  for (const TuningRow& r : kRows) {
    if (r.gpu == gpu && nranks >= r.min_ranks && nranks <= r.max_ranks) return &r;
  }
  return nullptr;
}

const TuningRow* TuningRows(size_t* count) noexcept {
  *count = sizeof(kRows) / sizeof(kRows[0]);
  return kRows;
}

// 16 parts x 4 blocks = 64 blocks of 512 threads: co-resident on an A100 (108 SMs), an H100/H200
// (132 SMs) and a B200 (148 SMs) with one block per SM, which the spin-waits between parts need.
constexpr ExchangeTuningRow kExchangeRows[] = {
    {GpuClass::kHopper, 2, 8, 4, 512, 256 * kKiB,
     "4 blocks a part: 64 blocks at most, one per SM of a 132-SM H100/H200 (co-residency, "
     "required); 512 threads as the other kernels; 256 KiB chunks: 2 slots for each of 8 "
     "destinations (4 MiB) fit the default 16 MiB staging buffer 4 times over; not measured"},
    {GpuClass::kAmpere, 2, 8, 4, 512, 256 * kKiB,
     "4 blocks a part: 64 blocks at most, one per SM of a 108-SM A100 (co-residency, required); "
     "512 threads as the other kernels; 256 KiB chunks as on sm_90; not measured"},
    {GpuClass::kBlackwell, 2, 8, 4, 512, 256 * kKiB,
     "4 blocks a part: 64 blocks at most, one per SM of a 148-SM B200 (co-residency, required); "
     "512 threads as the other kernels; 256 KiB chunks as on sm_90; not measured"},
};

const AlltoAllTuningRow* FindAlltoAllTuning(GpuClass gpu, int nranks) noexcept {
  for (const AlltoAllTuningRow& r : kAlltoAllRows) {
    if (r.gpu == gpu && nranks >= r.min_ranks && nranks <= r.max_ranks) return &r;
  }
  return nullptr;
}

const AlltoAllTuningRow* AlltoAllTuningRows(size_t* count) noexcept {
  *count = sizeof(kAlltoAllRows) / sizeof(kAlltoAllRows[0]);
  return kAlltoAllRows;
}

const ExchangeTuningRow* FindExchangeTuning(GpuClass gpu, int nranks) noexcept {
  for (const ExchangeTuningRow& r : kExchangeRows) {
    if (r.gpu == gpu && nranks >= r.min_ranks && nranks <= r.max_ranks) return &r;
  }
  return nullptr;
}

const ExchangeTuningRow* ExchangeTuningRows(size_t* count) noexcept {
  *count = sizeof(kExchangeRows) / sizeof(kExchangeRows[0]);
  return kExchangeRows;
}

}  // namespace ncclscope::collectives
