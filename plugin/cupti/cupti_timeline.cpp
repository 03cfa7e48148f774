#include "plugin/cupti/cupti_timeline.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace ncclscope::plugin {
namespace {

// What a device remembers: enough NCCL ends to find the one before a kernel of any stream still
// to be reported, and the compute of the stretches they bound. Bounded, so a job that stops
// communicating (or never computes) keeps its memory.
constexpr size_t kMaxNcclEnds = 256;
constexpr size_t kMaxCompute = 1024;

template <typename T>
void KeepNewest(std::vector<T>* v, size_t n) {
  if (v->size() > n) v->erase(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(v->size() - n));
}

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
  std::stable_sort(batch.begin(), batch.end(),
                   [](const KernelActivity& a, const KernelActivity& b) { return a.end < b.end; });
  for (const KernelActivity& k : batch) {
    Device& d = devices_[k.device];
    if (!k.nccl) {
      d.compute.emplace_back(k.start, k.end);
      KeepNewest(&d.compute, kMaxCompute);
      continue;
    }
    NcclKernelSpan span;
    span.kernel = k;
    for (uint64_t end : d.nccl_ends) {
      if (end <= k.start && end > span.prev_end) span.prev_end = end;
    }
    if (span.prev_end != 0) {
      const auto [ns, n] = UnionWithin(d.compute, span.prev_end, k.start);
      span.compute_ns = ns;
      span.compute_kernels = n;
    }
    out->push_back(span);
    d.nccl_ends.push_back(k.end);
    KeepNewest(&d.nccl_ends, kMaxNcclEnds);
  }
}

void DeviceTimeline::Lose() {
  for (auto& [id, d] : devices_) {
    d.nccl_ends.clear();
    d.compute.clear();
  }
}

}  // namespace ncclscope::plugin
