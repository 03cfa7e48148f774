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

// One NCCL kernel and the compute before it. prev_end 0: no NCCL kernel of this device was seen
// since the timeline started or lost activity, so compute_ns covers an unknown stretch.
struct NcclKernelSpan {
  KernelActivity kernel;
  uint64_t prev_end = 0;
  uint64_t compute_ns = 0;  // union of compute kernel time inside (prev_end, kernel.start)
  uint32_t compute_kernels = 0;
};

// Per-device state between batches. Not thread-safe: one owner (the probe's background thread).
class DeviceTimeline {
 public:
  // Takes one batch of kernels in any order (CUPTI hands them out by completion, per buffer) and
  // appends a span for each NCCL kernel, in start order per device. A compute kernel reported
  // after the NCCL kernel that followed it was already handed out is not counted (kernels of
  // one stream complete in order, so this needs two streams and a flush between them).
  void Add(std::vector<KernelActivity> batch, std::vector<NcclKernelSpan>* out);
  // Activity was lost: the next span of every device starts an unknown stretch.
  void Lose();

 private:
  struct Device {
    uint64_t prev_end = 0;
    // Compute intervals not yet attributed (they end after prev_end), start order.
    std::vector<std::pair<uint64_t, uint64_t>> compute;
  };
  std::map<uint32_t, Device> devices_;
};

// The length of the union of intervals clipped to [lo, hi), and how many of them overlap it.
// Pure.
std::pair<uint64_t, uint32_t> UnionWithin(std::vector<std::pair<uint64_t, uint64_t>> intervals,
                                          uint64_t lo, uint64_t hi);

}  // namespace ncclscope::plugin
