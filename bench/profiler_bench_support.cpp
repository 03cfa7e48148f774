#include "bench/profiler_bench_support.h"

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>

namespace {
std::atomic<uint64_t> g_mallocs{0};
}  // namespace

extern "C" void* __libc_malloc(size_t);
extern "C" void* malloc(size_t n) {
  g_mallocs.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}

namespace ncclscope::bench {

uint64_t MallocsSoFar() {
  return g_mallocs.load(std::memory_order_relaxed);
}

int RunWithPrivateRingDir(int argc, char** argv) {
  char tmpl[] = "/tmp/ncclscope-bench-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  if (dir == nullptr) return 1;
  setenv("NCCLSCOPE_DIR", dir, 1);
  setenv("NCCLSCOPE_TRACK_COMPLETION", "0", 1);
  setenv("NCCLSCOPE_WATCHDOG", "0", 1);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace ncclscope::bench
