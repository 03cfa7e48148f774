#include "plugin/watchdog/stall_rule.h"

#include <algorithm>
#include <cmath>

namespace ncclscope::plugin {

int OpClassOf(trace::OpType op) {
  using trace::OpType;
  switch (op) {
    case OpType::kAllReduce:
      return static_cast<int>(OpClass::kAllReduce);
    case OpType::kBroadcast:
      return static_cast<int>(OpClass::kBroadcast);
    case OpType::kReduce:
      return static_cast<int>(OpClass::kReduce);
    case OpType::kAllGather:
      return static_cast<int>(OpClass::kAllGather);
    case OpType::kReduceScatter:
      return static_cast<int>(OpClass::kReduceScatter);
    case OpType::kAlltoAll:
      return static_cast<int>(OpClass::kAlltoAll);
    case OpType::kGather:
      return static_cast<int>(OpClass::kGather);
    case OpType::kScatter:
      return static_cast<int>(OpClass::kScatter);
    case OpType::kSend:
      return static_cast<int>(OpClass::kSend);
    case OpType::kRecv:
      return static_cast<int>(OpClass::kRecv);
    case OpType::kGroupEnd:
      return static_cast<int>(OpClass::kGroupEnd);
    case OpType::kCommInitRank:
    case OpType::kCommInitRankConfig:
    case OpType::kCommInitAll:
    case OpType::kCommInitRankScalable:
    case OpType::kCommSplit:
    case OpType::kCommShrink:
      return static_cast<int>(OpClass::kCommCreate);
    case OpType::kCommFinalize:
    case OpType::kCommDestroy:
      return static_cast<int>(OpClass::kCommTeardown);
    default:
      return -1;
  }
}

const char* OpClassName(int cls) {
  static constexpr const char* kNames[kOpClassCount] = {
      "allreduce", "broadcast", "reduce", "allgather", "reducescatter", "alltoall",     "gather",
      "scatter",   "send",      "recv",   "group_end", "comm_create",   "comm_teardown"};
  return cls >= 0 && cls < kOpClassCount ? kNames[cls] : "unknown";
}

int LatencyHistogram::BucketOf(int64_t ns) {
  if (ns < 4) return static_cast<int>(std::max<int64_t>(ns, 0));
  const auto v = static_cast<uint64_t>(ns);
  const int msb = 63 - __builtin_clzll(v);
  const int sub = static_cast<int>((v >> (msb - 2)) & 3);
  return msb * 4 + sub;
}

int64_t LatencyHistogram::UpperEdge(int bucket) {
  if (bucket < 4) return bucket + 1;
  const int msb = bucket / 4;
  const int sub = bucket % 4;
  if (msb >= 62) return INT64_MAX;
  return static_cast<int64_t>(static_cast<uint64_t>(4 + sub + 1) << (msb - 2));
}

void LatencyHistogram::Add(int64_t ns) {
  if (total_ >= kDecayAt) {
    total_ = 0;
    for (uint32_t& c : counts_) {
      c /= 2;
      total_ += c;
    }
  }
  ++counts_[static_cast<size_t>(BucketOf(ns))];
  ++total_;
}

int64_t LatencyHistogram::Quantile(double q) const {
  if (total_ == 0) return 0;
  // The smallest bucket edge with at least ceil(q x total) samples at or below it.
  const auto want = static_cast<uint64_t>(std::ceil(q * static_cast<double>(total_)));
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts_[static_cast<size_t>(b)];
    if (seen >= want && seen != 0) return UpperEdge(b);
  }
  return UpperEdge(kBuckets - 1);
}

void StallRule::OnIssue(int cls, int64_t t) {
  ClassState& c = classes_[static_cast<size_t>(cls)];
  if (c.in_flight++ == 0) c.progress_ns = t;
}

void StallRule::OnComplete(int cls, int64_t latency_ns, int64_t t_done) {
  ClassState& c = classes_[static_cast<size_t>(cls)];
  if (c.in_flight > 0) --c.in_flight;
  c.latency.Add(latency_ns);
  c.progress_ns = std::max(c.progress_ns, t_done);
}

void StallRule::OnForget(int cls) {
  ClassState& c = classes_[static_cast<size_t>(cls)];
  if (c.in_flight > 0) --c.in_flight;
}

int64_t StallRule::ThresholdNs(int cls) const {
  const double scaled = params_.p99_factor * static_cast<double>(P99Ns(cls));
  if (scaled >= 9.0e18) return INT64_MAX;
  return std::max(params_.floor_ns, static_cast<int64_t>(scaled));
}

StallState StallRule::Check(int64_t now) const {
  StallState worst;
  double worst_ratio = 0;
  for (int cls = 0; cls < kOpClassCount; ++cls) {
    const ClassState& c = classes_[static_cast<size_t>(cls)];
    if (c.in_flight == 0) continue;
    const int64_t waited = now - c.progress_ns;
    const int64_t t = ThresholdNs(cls);
    const double ratio = static_cast<double>(waited) / static_cast<double>(t);
    if (waited <= t || ratio <= worst_ratio) continue;
    worst_ratio = ratio;
    worst = {true, cls, c.progress_ns, waited, t, c.in_flight};
  }
  return worst;
}

}  // namespace ncclscope::plugin
