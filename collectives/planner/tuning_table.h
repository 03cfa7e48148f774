// The one table of sizes and thresholds ncclscope's AllReduce kernels are chosen by, per GPU
// generation and rank count, each row with where its values come from (docs/collectives.md).
// Nothing here is measured on multi-GPU hardware yet: rows say whether a value is a published
// number or a model-based estimate.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ncclscope::collectives {

// GPU generations the kernels are built for: sm_80 (A100), sm_90 (H100/H200), sm_100 (B200/GB200;
// its cubin also runs on sm_103, B300). Anything else, e.g. sm_120 (consumer and workstation
// Blackwell, no NVLink between cards), is not accelerated.
enum class GpuClass : uint8_t { kUnknown, kAmpere, kHopper, kBlackwell };
inline constexpr GpuClass kGpusWithKernels[] = {GpuClass::kAmpere, GpuClass::kHopper,
                                                GpuClass::kBlackwell};
GpuClass GpuClassOf(int compute_major) noexcept;
const char* GpuClassName(GpuClass g) noexcept;

struct TuningRow {
  GpuClass gpu;
  int min_ranks;
  int max_ranks;
  size_t one_shot_max_bytes;  // below this: one-shot
  size_t two_shot_max_bytes;  // below this (and not one-shot): two-shot; from here: NCCL
  uint32_t blocks;
  uint32_t threads;
  const char* provenance;
};

// The row for (gpu, nranks), or null: that combination is not accelerated.
const TuningRow* FindTuning(GpuClass gpu, int nranks) noexcept;
// Every row, for the docs and tests.
const TuningRow* TuningRows(size_t* count) noexcept;

// All-to-all (alltoall_plan.h): one algorithm, so one limit, on the whole send buffer of a rank
// (count x element size x ranks, what it copies into its staging buffer).
struct AlltoAllTuningRow {
  GpuClass gpu;
  int min_ranks;
  int max_ranks;
  size_t max_bytes;  // below this: ncclscope's pull kernel; from here: NCCL
  uint32_t blocks;
  uint32_t threads;
  const char* provenance;
};

const AlltoAllTuningRow* FindAlltoAllTuning(GpuClass gpu, int nranks) noexcept;

// Grouped sends and receives (exchange_plan.h): each part (one peer, one direction) gets
// blocks_per_part blocks of `threads`; at most 2 x 8 parts, all co-resident.
struct ExchangeTuningRow {
  GpuClass gpu;
  int min_ranks;
  int max_ranks;
  uint32_t blocks_per_part;
  uint32_t threads;
  size_t chunk_bytes;  // what a part moves through its slot at once; a multiple of 16 x blocks
  const char* provenance;
};

const ExchangeTuningRow* FindExchangeTuning(GpuClass gpu, int nranks) noexcept;
const ExchangeTuningRow* ExchangeTuningRows(size_t* count) noexcept;
const AlltoAllTuningRow* AlltoAllTuningRows(size_t* count) noexcept;

}  // namespace ncclscope::collectives
