// What the profiler plugin's callbacks cost when it is the whole recorder (NCCL_PROFILER_PLUGIN
// without LD_PRELOAD: docs/performance.md, "Profiler events"). Here every record comes
// from the events, so a whole operation's stream is timed, as NCCL 2.28.9 emits it for one
// ungrouped call: src/enqueue.cc (taskAppend: GroupApi, GroupStartApiStop, CollApi or P2pApi
// started and stopped inside the call), src/group.cc (ncclGroupEndInternal: GroupEndApiStart, the
// GroupApi stop), src/plugin/profiler.cc (ncclProfilerStartTaskEvents: the Coll or P2p task
// started and stopped at launch; ncclProfilerStart/StopKernelChEvent: one KernelCh per channel,
// KernelChStop, stop). Each benchmark reports ns per callback (startEvent, stopEvent and
// recordEventState each count one) and the heap allocations of the timed loop. The interposed
// mode's per-event costs are bench/profiler_event_bench.cpp's; run both for the comparison.
#include <benchmark/benchmark.h>

#include "bench/profiler_bench_support.h"
#include "plugin/core/profiler_abi.h"

extern "C" const ncclscope::plugin::prof_abi::TableV5 ncclProfiler_v5;

namespace {

namespace abi = ncclscope::plugin::prof_abi;

constexpr int kGroupStartApiStop = 23;  // ncclProfilerGroupStartApiStop, profiler_v5.h
constexpr int kGroupEndApiStart = 24;   // ncclProfilerGroupEndApiStart
constexpr int kChannels = 2;

// A communicator created as NCCL creates it when no interposed call is in progress: the plugin's
// init makes it a plugin-only context.
struct Comm {
  void* ctx = nullptr;
  void* stream = reinterpret_cast<void*>(0x5000);
  uint64_t nccl_seq = 0;
  Comm(uint64_t hash, int nranks, int rank) {
    int mask = 0;
    ncclProfiler_v5.init(&ctx, hash, &mask, "bench", 1, nranks, rank, nullptr);
  }
};

int g_callbacks = 0;  // callbacks of the last Once(): what the per-callback rate divides by

void* Start(Comm& c, const abi::EventDescrV5& e) {
  void* h = nullptr;
  ncclProfiler_v5.startEvent(c.ctx, &h, const_cast<abi::EventDescrV5*>(&e));
  ++g_callbacks;
  return h;
}
void Stop(void* h) {
  ncclProfiler_v5.stopEvent(h);
  ++g_callbacks;
}
void State(void* h, int state) {
  abi::StateArgsV4 args{};
  ncclProfiler_v5.recordEventState(h, state, &args);
  ++g_callbacks;
}

void* GroupApi(Comm& c) {
  abi::EventDescrV5 e{};
  e.type = abi::kGroupApi;
  e.groupApi.groupDepth = 1;
  void* g = Start(c, e);
  State(g, kGroupStartApiStop);
  return g;
}

void Channels(Comm& c, void* task) {
  for (int ch = 0; ch < kChannels; ++ch) {
    abi::EventDescrV5 e{};
    e.type = abi::kKernelCh;
    e.parentObj = task;
    e.kernelCh = {static_cast<uint8_t>(ch), 7000u + static_cast<uint64_t>(ch)};
    void* k = Start(c, e);
    State(k, abi::kStateKernelChStop);
    Stop(k);
  }
}

// One ungrouped call over two channels, a collective or a send: 14 callbacks.
template <bool kSend>
void Operation(Comm& c) {
  void* g = GroupApi(c);
  abi::EventDescrV5 api{};
  api.parentObj = g;
  if (kSend) {
    api.type = abi::kP2pApi;
    api.p2pApi = {"Send", 1024, "ncclFloat32", c.stream, false};
  } else {
    api.type = abi::kCollApi;
    api.collApi = {"AllReduce", 1024, "ncclFloat32", 0, c.stream, false};
  }
  void* a = Start(c, api);
  Stop(a);
  State(g, kGroupEndApiStart);
  abi::EventDescrV5 task{};
  task.parentObj = a;
  if (kSend) {
    task.type = abi::kP2p;
    task.p2p.func = "Send";
    task.p2p.peer = 1;
    task.p2p.nChannels = kChannels;
  } else {
    task.type = abi::kColl;
    task.coll.seqNumber = c.nccl_seq++;
    task.coll.func = "AllReduce";
    task.coll.nChannels = kChannels;
  }
  void* t = Start(c, task);
  Stop(t);
  Stop(g);
  Channels(c, t);
}

void Report(benchmark::State& state, int callbacks_per_iter, uint64_t mallocs_before) {
  const uint64_t mallocs =
      ncclscope::bench::MallocsSoFar() - mallocs_before;  // before the counters allocate
  const double events = static_cast<double>(state.iterations()) * callbacks_per_iter;
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["ns_per_callback"] =
      benchmark::Counter(events, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["callbacks_per_op"] = callbacks_per_iter;
  state.counters["allocs"] = static_cast<double>(mallocs);
}

template <void (*Op)(Comm&)>
void BM_PluginOnly(benchmark::State& state) {
  static Comm comm(0xbe0c, 2, 0);
  if (comm.ctx == nullptr) return state.SkipWithError("the plugin gave no plugin-only context");
  Op(comm);  // warm: the first call of a kind may register names
  g_callbacks = 0;
  Op(comm);
  const int per_op = g_callbacks;
  const uint64_t mallocs = ncclscope::bench::MallocsSoFar();
  for (auto _ : state) Op(comm);
  Report(state, per_op, mallocs);
}
BENCHMARK(BM_PluginOnly<Operation<false>>)->Name("BM_PluginOnlyAllReduce")->UseRealTime();
BENCHMARK(BM_PluginOnly<Operation<true>>)->Name("BM_PluginOnlySend")->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  return ncclscope::bench::RunWithPrivateRingDir(argc, argv);
}
