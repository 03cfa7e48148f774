#include "collectives/gpu_check/report.h"

#include <algorithm>

#include "collectives/types/accel_types.h"

namespace ncclscope::gpu_check {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void PrintSummary(const Summary& s, FILE* out) {
  std::fprintf(out, "==== ncclscope-gpu-check summary ====\n");
  std::fprintf(out, "device: %s\n", s.device.c_str());
  if (s.copy_gbps >= 0) {
    std::fprintf(out, "hbm ceiling: device-to-device copy %.1f GB/s of reads+writes (%s)\n",
                 s.copy_gbps, s.copy_how.c_str());
  } else {
    std::fprintf(out, "hbm ceiling: not measured (%s)\n", s.copy_how.c_str());
  }
  for (const std::string& n : s.notes) std::fprintf(out, "%s\n", n.c_str());
  std::fprintf(out,
               "columns: launch_us = host time of one cuLaunchKernel (median); kernel_us = the "
               "last-launched rank's kernel (cuEvent, median); algbw = bytes / kernel time; "
               "dev_GB/s = all ranks' device reads+writes / kernel time (one device holds every "
               "rank); %%copy = dev_GB/s / the copy ceiling; moe rows: see the (c) moe lines\n");
  std::fprintf(out, "%5s %-34s %6s %10s %7s %5s %5s %9s %10s %8s %9s %6s\n", "ranks", "kernel",
               "plan", "bytes", "launch", "runs", "wrong", "launch_us", "kernel_us", "algbw",
               "dev_GB/s", "%copy");
  for (const CaseResult& r : s.cases) {
    const double kernel_us = Median(r.kernel_us);
    const double algbw = kernel_us > 0 ? static_cast<double>(r.c.bytes) / (kernel_us * 1e3) : 0;
    const double dev = kernel_us > 0 ? r.c.nranks * BytesMovedPerRank(r.c) / (kernel_us * 1e3) : 0;
    char shape[24];
    std::snprintf(shape, sizeof(shape), "%ux%u", r.c.blocks, r.c.threads);
    char pct[16] = "-";
    if (s.copy_gbps > 0 && kernel_us > 0)
      std::snprintf(pct, sizeof(pct), "%.0f", 100 * dev / s.copy_gbps);
    const bool moe = r.c.op == Op::kMoeDispatch || r.c.op == Op::kMoeCombine;
    std::fprintf(out, "%5d %-34s %6s %10zu %7s %5d %5d %9.1f %10.1f %8.2f %9.1f %6s\n", r.c.nranks,
                 CaseName(r.c).c_str(),
                 moe           ? "plan"
                 : r.c.planned ? "table"
                               : "forced",
                 r.c.bytes, shape, r.runs, r.wrong, Median(r.launch_us), kernel_us, algbw, dev,
                 pct);
  }
}

}  // namespace ncclscope::gpu_check
