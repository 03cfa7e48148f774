#include "exporters/buckets.h"

#include <algorithm>

namespace ncclscope::exporters {
namespace {

std::vector<double> Geometric(double first, double factor, int n) {
  std::vector<double> bounds;
  double b = first;
  for (int i = 0; i < n; ++i, b *= factor) bounds.push_back(b);
  return bounds;
}

}  // namespace

const std::vector<double>& DurationBucketsSeconds() {
  static const std::vector<double> kBounds = Geometric(10e-6, 4, 11);
  return kBounds;
}

const std::vector<double>& SizeBucketsBytes() {
  static const std::vector<double> kBounds = Geometric(1024, 4, 12);
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
