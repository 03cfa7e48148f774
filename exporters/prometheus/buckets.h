// The histogram buckets of docs/metrics.md, fixed so that every exporter of a cluster (and every
// dashboard query) agrees on them, and the plain counts the exporter keeps for each histogram.
#pragma once

#include <cstdint>
#include <vector>

namespace ncclscope::exporters {

// Durations: 10 us x 4^k, 10 us ... 10.49 s (11 upper bounds, then +Inf). Thread-safe.
const std::vector<double>& DurationBucketsSeconds();
// Durations per size class: the above without its two extremes, 40 us ... 2.62 s (9 upper bounds,
// then +Inf), the same `le` strings. Thread-safe.
const std::vector<double>& DurationBySizeBucketsSeconds();
// Sizes: 1 KiB x 4^k, 1 KiB ... 4 GiB (12 upper bounds, then +Inf). Thread-safe.
const std::vector<double>& SizeBucketsBytes();

// Per-bucket (not cumulative) counts; the last entry is the +Inf bucket. Not thread-safe.
struct BucketCounts {
  std::vector<uint64_t> counts;
  double sum = 0;
  uint64_t count = 0;

  void Observe(double value, const std::vector<double>& bounds);
  void Add(const BucketCounts& other);
};

}  // namespace ncclscope::exporters
