// The CUPTI probe's arithmetic, free of CUPTI itself: which kernels are NCCL's, and for each NCCL
// kernel how much GPU time compute kernels took on its device since the NCCL kernel before it.
// Times are CUPTI timestamps (ns); only differences of one device's times are taken.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace ncclscope::plugin {

// Whether a kernel name (mangled or not) is one of NCCL's device kernels: ncclDevKernel_* (2.19
// and later) or ncclKernel_* (older). Pure.
bool IsNcclKernelName(const char* name);

struct KernelActivity {
  uint64_t start = 0;
  uint64_t end = 0;
  uint32_t correlation = 0;  // CUPTI's id of the launching API call
  uint32_t device = 0;
  uint32_t stream = 0;
  bool nccl = false;
};

// One NCCL kernel and the compute before it: the device's NCCL work last ended at prev_end (the
// latest end of an NCCL kernel that ended before this one started), and compute kernels ran for
// compute_ns of the time between then and this kernel's start. Kernels of several streams may
// overlap: two collectives launched together after a compute phase both see that phase. prev_end
// 0: no earlier NCCL kernel of this device is known (the first, or activity was lost), so
// compute_ns covers an unknown stretch.
struct NcclKernelSpan {
  KernelActivity kernel;
  uint64_t prev_end = 0;
  uint64_t compute_ns = 0;
  uint32_t compute_kernels = 0;
};

// Per-device state between batches. Not thread-safe: one owner (the probe's background thread).
class DeviceTimeline {
 public:
  // Takes one batch of kernels in any order and appends a span for each NCCL kernel, in order of
  // their ends. Kernels are taken in order of their ends, which is how CUPTI hands them out (a
  // record is written when its kernel completes), so every kernel that ended before an NCCL
  // kernel started is known when that kernel is.
  void Add(std::vector<KernelActivity> batch, std::vector<NcclKernelSpan>* out);
  // Activity was lost: what ran meanwhile is unknown, so the next spans of every device start an
  // unknown stretch.
  void Lose();

 private:
  struct Device {
    std::vector<uint64_t> nccl_ends;                     // the newest kMaxNcclEnds, oldest first
    std::vector<std::pair<uint64_t, uint64_t>> compute;  // the newest kMaxCompute intervals
  };
  std::map<uint32_t, Device> devices_;
};

// The length of the union of intervals clipped to [lo, hi), and how many of them overlap it.
// Pure.
std::pair<uint64_t, uint32_t> UnionWithin(std::vector<std::pair<uint64_t, uint64_t>> intervals,
                                          uint64_t lo, uint64_t hi);

}  // namespace ncclscope::plugin
