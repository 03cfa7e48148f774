// How far apart two hosts' clocks can be, from the collectives themselves. Every rank's record
// times are CLOCK_REALTIME of its host (the ring file's realtime/monotonic pair); ranks of one host
// share one clock, hosts are as close as NTP/PTP keeps them. A collective cannot complete on any
// rank before every member entered it, so for a reference host R and another host X, with d the
// true offset of X's clock against R's:
//   d >= enter_X - done_R   and   d <= done_X - enter_R
// over every collective both took part in. Taking the timestamps as they are (d assumed 0) is
// then wrong by at most max(|lo|, |hi|) for X, and the trace states the largest such bound over
// all hosts; a host that never shared a completed collective with R has no bound. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>

namespace ncclscope::exporters::timeline {

class ClockBound {
 public:
  // A collective on the reference host (enter and device completion, wall ns).
  void AddReference(uint64_t comm_id, uint64_t seq, int64_t enter_ns, int64_t done_ns);
  // The same collective on a rank of `host`; ignored unless the reference host took part.
  void AddOther(const std::string& host, uint64_t comm_id, uint64_t seq, int64_t enter_ns,
                int64_t done_ns);

  struct Result {
    int hosts = 0;             // other hosts seen
    int bounded_hosts = 0;     // of which connected to the reference by collectives both ways
    int64_t max_bound_ns = 0;  // the largest bound of a bounded host
    std::string worst_host;    // that host
  };
  Result Get() const;

 private:
  struct Reference {
    int64_t latest_enter = INT64_MIN;
    int64_t earliest_done = INT64_MAX;
  };
  struct Interval {
    int64_t lo = INT64_MIN;  // d >= lo
    int64_t hi = INT64_MAX;  // d <= hi
  };
  struct KeyHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& k) const {
      return std::hash<uint64_t>()(k.first * 0x9E3779B97F4A7C15ull ^ k.second);
    }
  };
  std::unordered_map<std::pair<uint64_t, uint64_t>, Reference, KeyHash> reference_;
  std::map<std::string, Interval> hosts_;
};

}  // namespace ncclscope::exporters::timeline
