// What one NCCL profiler-plugin callback costs at the default activation mask (docs/performance.md,
// "Profiler events"): the hot kinds NCCL 2.28.9 calls per operation (CollApi, Coll, P2pApi, P2p:
// start and stop) and per kernel channel (KernelCh start, KernelChStop state, stop), through the
// probe's own callbacks as NCCL's function table calls them, on a communicator created through the
// interposer (so events are numbered as in a real job). API events run inside an interposed call,
// as NCCL emits them there. Each benchmark reports ns per event and the heap allocations made by
// the events (malloc, which operator new also uses, is counted).
#include <benchmark/benchmark.h>
#include <nccl.h>

#include <string>

#include "bench/profiler_bench_support.h"
#include "plugin/core/profiler_abi.h"
#include "plugin/core/thread_state.h"
#include "plugin/profiler/profiler_plugin.h"
#include "trace/record.h"

extern "C" void benchfake_set_init_hook(void (*hook)(int, int));
extern "C" const ncclscope::plugin::prof_abi::TableV5 ncclProfiler_v5;

namespace {

namespace abi = ncclscope::plugin::prof_abi;
using ncclscope::plugin::Tls;

int g_mask = 0;
void* g_ctx = nullptr;
ncclComm_t g_comm = nullptr;

void OnInit(int rank, int nranks) {
  ncclProfiler_v5.init(&g_ctx, 0xbeef, &g_mask, nullptr, 1, nranks, rank, nullptr);
}

bool Setup() {
  static bool ok = [] {
    benchfake_set_init_hook(OnInit);
    ncclUniqueId uid;
    if (ncclGetUniqueId(&uid) != ncclSuccess) return false;
    if (ncclCommInitRank(&g_comm, 2, uid, 0) != ncclSuccess) return false;
    return g_ctx != nullptr;
  }();
  return ok;
}

// Pretends the calling thread is inside an interposed call of `op` (to peer), as when NCCL emits
// API events; the interposer sets the same fields.
struct InCall {
  explicit InCall(ncclscope::trace::OpType op, int peer = -1) {
    auto& ts = Tls();
    ts.in_probe = 1;
    ts.call_op = static_cast<uint32_t>(op);
    ts.call_peer = peer;
  }
  ~InCall() {
    auto& ts = Tls();
    ts.in_probe = 0;
    ts.call_op = 0;
  }
};

void* Start(abi::EventDescrV5* d) {
  void* h = nullptr;
  ncclProfiler_v5.startEvent(g_ctx, &h, d);
  return h;
}

void Report(benchmark::State& state, uint64_t events_per_iter, uint64_t news_before) {
  const uint64_t news =
      ncclscope::bench::MallocsSoFar() - news_before;  // before the counters below allocate
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events_per_iter));
  // Wall-clock ns per event (the loop's real time over its events).
  state.counters["ns_per_event"] =
      benchmark::Counter(static_cast<double>(state.iterations() * events_per_iter),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["allocs"] = static_cast<double>(news);
}

// CollApi start + stop inside the interposed call (2 events).
void BM_CollApi(benchmark::State& state) {
  if (!Setup()) return state.SkipWithError("no profiler context");
  InCall call(ncclscope::trace::OpType::kAllReduce);
  abi::EventDescrV5 d{};
  d.type = abi::kCollApi;
  d.collApi.func = "AllReduce";
  const uint64_t news = ncclscope::bench::MallocsSoFar();
  for (auto _ : state) {
    void* h = Start(&d);
    ncclProfiler_v5.stopEvent(h);
    benchmark::DoNotOptimize(h);
  }
  Report(state, 2, news);
}
BENCHMARK(BM_CollApi)->UseRealTime();

// Coll start + stop under a CollApi parent (2 events).
void BM_Coll(benchmark::State& state) {
  if (!Setup()) return state.SkipWithError("no profiler context");
  void* api = nullptr;
  {
    InCall call(ncclscope::trace::OpType::kAllReduce);
    abi::EventDescrV5 a{};
    a.type = abi::kCollApi;
    api = Start(&a);
  }
  abi::EventDescrV5 d{};
  d.type = abi::kColl;
  d.parentObj = api;
  d.coll.func = "AllReduce";
  const uint64_t news = ncclscope::bench::MallocsSoFar();
  for (auto _ : state) {
    void* h = Start(&d);
    ncclProfiler_v5.stopEvent(h);
    benchmark::DoNotOptimize(h);
  }
  Report(state, 2, news);
}
BENCHMARK(BM_Coll)->UseRealTime();

// P2pApi start + stop inside an interposed ncclSend (2 events).
void BM_P2pApi(benchmark::State& state) {
  if (!Setup()) return state.SkipWithError("no profiler context");
  InCall call(ncclscope::trace::OpType::kSend, 1);
  abi::EventDescrV5 d{};
  d.type = abi::kP2pApi;
  d.p2pApi.func = "Send";
  const uint64_t news = ncclscope::bench::MallocsSoFar();
  for (auto _ : state) {
    void* h = Start(&d);
    ncclProfiler_v5.stopEvent(h);
    benchmark::DoNotOptimize(h);
  }
  Report(state, 2, news);
}
BENCHMARK(BM_P2pApi)->UseRealTime();

// P2p start + stop under a P2pApi parent (2 events).
void BM_P2p(benchmark::State& state) {
  if (!Setup()) return state.SkipWithError("no profiler context");
  void* api = nullptr;
  {
    InCall call(ncclscope::trace::OpType::kSend, 1);
    abi::EventDescrV5 a{};
    a.type = abi::kP2pApi;
    a.p2pApi.func = "Send";
    api = Start(&a);
  }
  abi::EventDescrV5 d{};
  d.type = abi::kP2p;
  d.parentObj = api;
  d.p2p.func = "Send";
  d.p2p.peer = 1;
  const uint64_t news = ncclscope::bench::MallocsSoFar();
  for (auto _ : state) {
    void* h = Start(&d);
    ncclProfiler_v5.stopEvent(h);
    benchmark::DoNotOptimize(h);
  }
  Report(state, 2, news);
}
BENCHMARK(BM_P2p)->UseRealTime();

// KernelCh start, KernelChStop state, stop, on an operation whose device_start marker is already
// written (every channel after the first; 3 events).
void BM_KernelCh(benchmark::State& state) {
  if (!Setup()) return state.SkipWithError("no profiler context");
  abi::EventDescrV5 c{};
  c.type = abi::kColl;
  void* coll = Start(&c);
  abi::EventDescrV5 d{};
  d.type = abi::kKernelCh;
  d.parentObj = coll;
  d.kernelCh = {1, 1000};
  ncclProfiler_v5.stopEvent(Start(&d));  // the first channel: writes the marker
  abi::StateArgsV4 args{};
  const uint64_t news = ncclscope::bench::MallocsSoFar();
  for (auto _ : state) {
    void* h = Start(&d);
    ncclProfiler_v5.recordEventState(h, abi::kStateKernelChStop, &args);
    ncclProfiler_v5.stopEvent(h);
    benchmark::DoNotOptimize(h);
  }
  Report(state, 3, news);
}
BENCHMARK(BM_KernelCh)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  return ncclscope::bench::RunWithPrivateRingDir(argc, argv);
}
