// What NCCLSCOPE_CUPTI adds to one intercepted call: CorrelatedCall
// (plugin/cupti/cupti_correlate.h) around the forward to NCCL. Off (the default, or CUPTI unusable:
// no driver) it is one relaxed load and a predicted branch; on, the push and pop of the call's
// external correlation id into CUPTI. Measured here: the wrapper off, the wrapper on with push/pop
// that do nothing (our own part), and on with the emulated libcupti's push/pop (a thread-local
// stack, as CUPTI keeps one). Real CUPTI's push/pop need a GPU driver (without one they return an
// error at once), so their cost is measured when a GPU machine is lent. The forward is a
// non-inlined call that returns, so differences to Direct are ours. The wrapper is inline code:
// this file is compiled with -O2 whatever the build type, as the shipped library is.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdio>

#include "plugin/core/probe_clock.h"
#include "plugin/cupti/cupti_correlate.h"

namespace ncclscope::plugin {
namespace {

__attribute__((noinline)) ncclResult_t Forward() {
  benchmark::ClobberMemory();
  return ncclSuccess;
}

CUptiResult NoopPush(CUpti_ExternalCorrelationKind, uint64_t) {
  return CUPTI_SUCCESS;
}
CUptiResult NoopPop(CUpti_ExternalCorrelationKind, uint64_t*) {
  return CUPTI_SUCCESS;
}

CallFrame Frame() {
  CallFrame f;
  f.ts = &Tls();
  f.t_enter = ProbeNowNs();
  return f;
}

void Direct(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(Forward());
}

void Run(benchmark::State& state, const CuptiHooks* hooks) {
  g_cupti_hooks.store(hooks);
  const CallFrame f = Frame();
  for (auto _ : state) benchmark::DoNotOptimize(CorrelatedCall(f, Forward));
  g_cupti_hooks.store(nullptr);
}

void CorrelatedOff(benchmark::State& state) {
  Run(state, nullptr);
}

void CorrelatedNoopCupti(benchmark::State& state) {
  static const CuptiHooks hooks{NoopPush, NoopPop};
  Run(state, &hooks);
}

void CorrelatedEmulatedCupti(benchmark::State& state) {
  static CuptiHooks hooks{};
  void* lib = dlopen(EMULATED_CUPTI, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    state.SkipWithError(dlerror());
    return;
  }
  hooks.push =
      reinterpret_cast<decltype(hooks.push)>(dlsym(lib, "cuptiActivityPushExternalCorrelationId"));
  hooks.pop =
      reinterpret_cast<decltype(hooks.pop)>(dlsym(lib, "cuptiActivityPopExternalCorrelationId"));
  Run(state, &hooks);
}

BENCHMARK(Direct);
BENCHMARK(CorrelatedOff);
BENCHMARK(CorrelatedNoopCupti);
BENCHMARK(CorrelatedEmulatedCupti);

}  // namespace
}  // namespace ncclscope::plugin

BENCHMARK_MAIN();
