// What numbering a profiler-v4 event launched away from its call costs
// (plugin/runtime/v4_call_log.h, docs/performance.md "Profiler events"): per call, the interposer's
// Add of its arguments and the Coll event's Claim, for a group of `range(0)` collectives on
// distinct buffers whose events come in reverse call order (NCCL's plan order runs a type's
// collectives smallest first). Reported per call (one Add and one Claim), and the Add alone.
#include <benchmark/benchmark.h>

#include <vector>

#include "plugin/runtime/v4_call_log.h"

namespace {

using ncclscope::plugin::CollectiveCallKey;
using ncclscope::plugin::CollEventKey;
using ncclscope::plugin::V4CallLog;
using ncclscope::trace::OpType;

namespace abi = ncclscope::plugin::prof_abi;

abi::CollV4 EventOf(float* buf, size_t count) {
  abi::CollV4 c{};
  c.func = "AllReduce";
  c.sendBuff = buf;
  c.recvBuff = buf;
  c.count = count;
  c.datatype = "ncclFloat32";
  return c;
}

void BM_AddAndClaimPerCall(benchmark::State& state) {
  const auto group = static_cast<size_t>(state.range(0));
  V4CallLog log;
  std::vector<float> bufs(group);
  std::vector<abi::CollV4> events;
  for (size_t i = 0; i < group; ++i) events.push_back(EventOf(&bufs[i], 1024 + i));
  uint64_t seq = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < group; ++i) {
      log.Add(CollectiveCallKey(OpType::kAllReduce, &bufs[i], &bufs[i], 1024 + i, ncclFloat32, -1),
              ++seq);
    }
    for (size_t i = group; i-- > 0;) benchmark::DoNotOptimize(log.Claim(CollEventKey(events[i])));
  }
  state.counters["ns_per_call"] =
      benchmark::Counter(static_cast<double>(state.iterations() * group),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_AddAndClaimPerCall)->Arg(1)->Arg(8)->Arg(32);

// The interposer's part alone (a call while a v4 context is attached), the baseline to subtract.
void BM_AddOnly(benchmark::State& state) {
  V4CallLog log;
  float buf[1] = {};
  uint64_t seq = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        log.Add(CollectiveCallKey(OpType::kAllReduce, buf, buf, 1024, ncclFloat32, -1), ++seq));
  }
  state.counters["ns_per_call"] =
      benchmark::Counter(static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_AddOnly);

}  // namespace

BENCHMARK_MAIN();
