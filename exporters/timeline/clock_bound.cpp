#include "exporters/timeline/clock_bound.h"

#include <algorithm>
#include <cstdlib>

namespace ncclscope::exporters::timeline {

void ClockBound::AddReference(uint64_t comm_id, uint64_t seq, int64_t enter_ns, int64_t done_ns) {
  Reference& r = reference_[{comm_id, seq}];
  r.latest_enter = std::max(r.latest_enter, enter_ns);
  r.earliest_done = std::min(r.earliest_done, done_ns);
}

void ClockBound::AddOther(const std::string& host, uint64_t comm_id, uint64_t seq, int64_t enter_ns,
                          int64_t done_ns) {
  Interval& x = hosts_[host];
  const auto it = reference_.find({comm_id, seq});
  if (it == reference_.end()) return;
  x.lo = std::max(x.lo, enter_ns - it->second.earliest_done);
  x.hi = std::min(x.hi, done_ns - it->second.latest_enter);
}

ClockBound::Result ClockBound::Get() const {
  Result r;
  for (const auto& [host, x] : hosts_) {
    ++r.hosts;
    if (x.lo == INT64_MIN || x.hi == INT64_MAX) continue;
    ++r.bounded_hosts;
    const int64_t bound = std::max(std::llabs(x.lo), std::llabs(x.hi));
    if (r.worst_host.empty() || bound > r.max_bound_ns) {
      r.max_bound_ns = bound;
      r.worst_host = host;
    }
  }
  return r;
}

}  // namespace ncclscope::exporters::timeline
