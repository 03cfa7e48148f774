// Cost of one NVTX push/pop pair through libncclscope.so as the NVTX injection (the path every
// nvtxRangePushA/nvtxRangePop of a training loop takes while `ncclscope run` injects it), against
// the same calls with no injection, and the allocations they make (none are allowed: design.md
// rule 2). NVTX_INJECTION64_PATH is set in main before the first NVTX call of this process.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>

extern "C" void* __libc_malloc(size_t);
namespace {
__thread long t_allocations = 0;
}
extern "C" void* malloc(size_t n) {
  ++t_allocations;
  return __libc_malloc(n);
}

namespace {

// A training loop's shape: a step range around a phase, the phase pushed and popped per call.
void BM_NvtxPushPop(benchmark::State& state) {
  nvtxRangePushA("step 1");
  const long before = t_allocations;
  for (auto _ : state) {
    nvtxRangePushA("backward");
    nvtxRangePop();
  }
  state.counters["allocations"] = static_cast<double>(t_allocations - before);
  nvtxRangePop();
}
BENCHMARK(BM_NvtxPushPop);

// The same with an attributes structure (nvtx3::scoped_range and PyTorch's record_function path).
void BM_NvtxPushExPop(benchmark::State& state) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "optimizer";
  nvtxRangePushA("step 1");
  const long before = t_allocations;
  for (auto _ : state) {
    nvtxRangePushEx(&a);
    nvtxRangePop();
  }
  state.counters["allocations"] = static_cast<double>(t_allocations - before);
  nvtxRangePop();
}
BENCHMARK(BM_NvtxPushExPop);

}  // namespace

int main(int argc, char** argv) {
  // NCCLSCOPE_BENCH_NO_INJECTION=1 measures NVTX with no tool (the baseline: a null pointer test).
  if (std::getenv("NCCLSCOPE_BENCH_NO_INJECTION") == nullptr) {
    setenv("NVTX_INJECTION64_PATH", PROBE_LIBRARY, 1);
  } else {
    unsetenv("NVTX_INJECTION64_PATH");
  }
  nvtxRangePushA("init");  // attaches (or not) before timing
  nvtxRangePop();
  void* probe = dlopen(PROBE_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
  std::printf("injection: %s\n", probe != nullptr ? "libncclscope.so" : "none");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
