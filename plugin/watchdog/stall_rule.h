// The watchdog's stall rule, as pure logic with injected time: an operation class is stalled when
// it has work in flight and none of it has completed for T = max(floor, k x p99 latency of that
// class). Progress, not a fixed timeout: slow operations that keep completing never stall, and a
// class whose operations are normally slow gets a proportionally longer T. Not thread-safe: the
// background thread owns it. No allocation after construction.
#pragma once

#include <array>
#include <cstdint>

#include "trace/record.h"

namespace ncclscope::plugin {

// What the latency statistics are kept per: each collective type, send, recv, and the blocking
// calls recorded "in call" (group end, communicator creation, teardown).
enum class OpClass : uint8_t {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kSend,
  kRecv,
  kGroupEnd,
  kCommCreate,
  kCommTeardown,
  kCount,
};
inline constexpr int kOpClassCount = static_cast<int>(OpClass::kCount);

// The class of op, or -1 for records the watchdog does not watch. Thread-safe (pure).
int OpClassOf(trace::OpType op);
// "allreduce", ..., "group_end", "comm_create", "comm_teardown". Thread-safe (pure).
const char* OpClassName(int cls);

// Latencies in log buckets: 4 per power of two (about 19% wide) from 1 ns to 2^63 ns. Counts are
// halved once they reach kDecayAt samples, so quantiles follow recent behaviour. Fixed size.
class LatencyHistogram {
 public:
  static constexpr int kBuckets = 64 * 4;
  static constexpr uint64_t kDecayAt = 1u << 16;

  void Add(int64_t ns);
  // The upper edge of the bucket holding quantile q (0 < q <= 1); 0 when empty.
  int64_t Quantile(double q) const;
  uint64_t total() const { return total_; }

  static int BucketOf(int64_t ns);
  static int64_t UpperEdge(int bucket);

 private:
  std::array<uint32_t, kBuckets> counts_{};
  uint64_t total_ = 0;
};

struct StallParams {
  int64_t floor_ns = 5'000'000'000;
  double p99_factor = 10;  // k
};

struct StallState {
  bool stalled = false;
  int cls = -1;              // the stalled class (the one waiting longest relative to its T)
  int64_t since_ns = 0;      // its last progress: last completion, or when it became busy
  int64_t waited_ns = 0;     // now - since_ns
  int64_t threshold_ns = 0;  // its T
  uint32_t in_flight = 0;    // its operations in flight
};

class StallRule {
 public:
  explicit StallRule(const StallParams& params) : params_(params) {}

  // An operation of cls was issued at t (ns, the probe's clock) and is now in flight.
  void OnIssue(int cls, int64_t t);
  // One in-flight operation of cls completed at t_done after latency_ns.
  void OnComplete(int cls, int64_t latency_ns, int64_t t_done);
  // One in-flight operation of cls will never be observed completing (overwritten, untracked):
  // it leaves the in-flight set without a sample and without counting as progress.
  void OnForget(int cls);

  // The rule, evaluated at now.
  StallState Check(int64_t now) const;

  // T of cls: max(floor, k x p99); the floor while cls has no samples.
  int64_t ThresholdNs(int cls) const;
  int64_t P99Ns(int cls) const { return classes_[cls].latency.Quantile(0.99); }
  uint32_t InFlight(int cls) const { return classes_[cls].in_flight; }

 private:
  struct ClassState {
    uint32_t in_flight = 0;
    int64_t progress_ns = 0;
    LatencyHistogram latency;
  };
  StallParams params_;
  std::array<ClassState, kOpClassCount> classes_{};
};

}  // namespace ncclscope::plugin
