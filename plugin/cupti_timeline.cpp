#include "plugin/cupti_timeline.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace ncclscope::plugin {
namespace {

// Compute intervals kept per device while no NCCL kernel comes: a job that stops communicating
// keeps the newest, merged, so memory stays bounded.
constexpr size_t kMaxPending = 4096;

bool StartsWith(const char* s, const char* prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

}  // namespace

bool IsNcclKernelName(const char* name) {
  if (name == nullptr) return false;
  // CUPTI reports kernels under their mangled names unless demangling is asked for: a free
  // function is "_Z<length><name>...".
  if (name[0] == '_' && name[1] == 'Z') {
    name += 2;
    while (std::isdigit(static_cast<unsigned char>(*name)) != 0) ++name;
  }
  return StartsWith(name, "ncclDevKernel_") || StartsWith(name, "ncclKernel_");
}

std::pair<uint64_t, uint32_t> UnionWithin(std::vector<std::pair<uint64_t, uint64_t>> intervals,
                                          uint64_t lo, uint64_t hi) {
  if (hi <= lo) return {0, 0};
  std::sort(intervals.begin(), intervals.end());
  uint64_t total = 0, covered_to = lo;
  uint32_t n = 0;
  for (auto [a, b] : intervals) {
    a = std::max(a, lo);
    b = std::min(b, hi);
    if (b <= a) continue;
    ++n;
    a = std::max(a, covered_to);
    if (b > a) {
      total += b - a;
      covered_to = b;
    }
  }
  return {total, n};
}

void DeviceTimeline::Add(std::vector<KernelActivity> batch, std::vector<NcclKernelSpan>* out) {
  std::stable_sort(
      batch.begin(), batch.end(),
      [](const KernelActivity& a, const KernelActivity& b) { return a.start < b.start; });
  for (const KernelActivity& k : batch) {
    Device& d = devices_[k.device];
    if (!k.nccl) {
      if (k.end > d.prev_end) d.compute.emplace_back(std::max(k.start, d.prev_end), k.end);
      if (d.compute.size() > kMaxPending) {
        std::sort(d.compute.begin(), d.compute.end());
        d.compute.erase(d.compute.begin(), d.compute.begin() + kMaxPending / 2);
      }
      continue;
    }
    NcclKernelSpan span;
    span.kernel = k;
    span.prev_end = d.prev_end;
    const auto [ns, n] = UnionWithin(d.compute, d.prev_end, k.start);
    span.compute_ns = ns;
    span.compute_kernels = n;
    out->push_back(span);
    // What runs on after this NCCL kernel ends counts toward the next gap.
    d.prev_end = std::max(d.prev_end, k.end);
    std::vector<std::pair<uint64_t, uint64_t>> kept;
    for (auto [a, b] : d.compute) {
      if (b > d.prev_end) kept.emplace_back(std::max(a, d.prev_end), b);
    }
    d.compute = std::move(kept);
  }
}

void DeviceTimeline::Lose() {
  for (auto& [id, d] : devices_) {
    d.prev_end = 0;
    d.compute.clear();
  }
}

}  // namespace ncclscope::plugin
