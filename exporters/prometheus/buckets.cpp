#include "exporters/prometheus/buckets.h"

#include <algorithm>

namespace ncclscope::exporters {
// Written out as decimal literals: the nearest doubles, which is what every exporter prints.
// prometheus-cpp formats `le` with 16 significant digits, so 6.4e-4 and 0.65536 still read
// "0.0006400000000000001" and "0.6553600000000001" (docs/metrics.md lists the exact strings).
const std::vector<double>& DurationBucketsSeconds() {
  static const std::vector<double> kBounds = {
      1e-5, 4e-5, 1.6e-4, 6.4e-4, 2.56e-3, 1.024e-2, 4.096e-2, 0.16384, 0.65536, 2.62144, 10.48576};
  return kBounds;
}

const std::vector<double>& DurationBySizeBucketsSeconds() {
  static const std::vector<double> kBounds = {4e-5,     1.6e-4,  6.4e-4,  2.56e-3, 1.024e-2,
                                              4.096e-2, 0.16384, 0.65536, 2.62144};
  return kBounds;
}

const std::vector<double>& SizeBucketsBytes() {
  static const std::vector<double> kBounds = [] {
    std::vector<double> bounds;
    for (double b = 1024; b <= 4294967296.0; b *= 4) bounds.push_back(b);  // exact: powers of 2
    return bounds;
  }();
  return kBounds;
}

void BucketCounts::Observe(double value, const std::vector<double>& bounds) {
  if (counts.empty()) counts.assign(bounds.size() + 1, 0);
  // Prometheus buckets are "less than or equal": a value on a bound belongs to that bucket.
  const auto at = std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin();
  ++counts[static_cast<size_t>(at)];
  sum += value;
  ++count;
}

void BucketCounts::Add(const BucketCounts& other) {
  if (counts.size() < other.counts.size()) counts.resize(other.counts.size(), 0);
  for (size_t i = 0; i < other.counts.size(); ++i) counts[i] += other.counts[i];
  sum += other.sum;
  count += other.count;
}

}  // namespace ncclscope::exporters
