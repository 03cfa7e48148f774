// NCCLSCOPE_NUMERICS's host cost, ncclscope's own part (docs/performance.md): the
// sampling decision of an unsampled call, and a sampled call's Before + After + the background
// thread's Poll that writes its record, in front of a driver whose every function returns at once.
// What the real driver adds (two cuLaunchKernel and one cuEventRecord per sampled call, a few
// microseconds on published measurements) needs a GPU; the interposer_bench runs with the mode on
// and off give the unsampled cost through the shipped library.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "plugin/numerics/numerics_probe.h"
#include "tests/plugin/fake_numerics_driver.h"

namespace ncclscope::plugin {
namespace {

// A driver whose launches do nothing and whose events have always fired.
testing::FakeNumericsDriver* InstantDriver() {
  static testing::FakeNumericsDriver driver;
  driver.run_twins = false;
  driver.events_done = true;
  testing::g_fake_numerics = &driver;
  return &driver;
}

std::unique_ptr<trace::RingWriter> MakeRing(std::string* dir) {
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/ncclscope-numerics-XXXXXX";
  if (mkdtemp(path.data()) == nullptr) return nullptr;
  *dir = path;
  trace::RingOptions options;
  options.dir = path;
  options.record_capacity = 1 << 16;
  std::string error;
  return trace::RingWriter::Create(options, &error);
}

NumericsSettings Settings(const char* mode, int64_t every) {
  std::vector<std::string> warnings;
  return ParseNumericsSettings(mode, every, "", "", &warnings);
}

float g_send[1024];
float g_recv[1024];

NumericsCall Call(const CommState& cs) {
  NumericsCall c;
  c.op = trace::OpType::kAllReduce;
  c.send = g_send;
  c.recv = g_recv;
  c.count = 1024;
  c.dtype = 7;  // ncclFloat32
  c.rank = 0;
  c.nranks = 8;
  c.comm_id = cs.id;
  c.stream = reinterpret_cast<cudaStream_t>(0x5);
  return c;
}

// An unsampled call with the mode on: the sampling countdown only.
void BM_UnsampledDecision(benchmark::State& state) {
  InstantDriver();
  std::string dir;
  auto ring = MakeRing(&dir);
  NumericsProbe probe(ring.get(), Settings("all", 1'000'000'000), "",
                      testing::LoadFakeNumericsDriver);
  CommState cs;
  cs.id = 1;
  probe.Sample(cs, trace::OpType::kAllReduce);  // the first call decides and is sampled
  for (auto _ : state) {
    benchmark::DoNotOptimize(probe.Sample(cs, trace::OpType::kAllReduce));
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
BENCHMARK(BM_UnsampledDecision);

// A sampled call: decision, Before (scan launch), After (hash launch, event), and the poll that
// writes its record, all against a driver that does nothing.
void BM_SampledCall(benchmark::State& state) {
  InstantDriver();
  std::string dir;
  auto ring = MakeRing(&dir);
  const char* mode = state.range(0) == 0 ? "nan" : state.range(0) == 1 ? "checksum" : "all";
  NumericsProbe probe(ring.get(), Settings(mode, 1), "", testing::LoadFakeNumericsDriver);
  CommState cs;
  cs.id = 1;
  ThreadState ts{};
  uint64_t seq = 0;
  for (auto _ : state) {
    if (probe.Sample(cs, trace::OpType::kAllReduce)) {
      const int32_t slot = probe.Before(Call(cs));
      probe.After(slot, ++seq, false, ts);
    }
    probe.Poll(static_cast<int64_t>(seq));
  }
  state.SetLabel(mode);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
BENCHMARK(BM_SampledCall)->Arg(0)->Arg(1)->Arg(2);

}  // namespace
}  // namespace ncclscope::plugin

BENCHMARK_MAIN();
