// NCCLSCOPE_NUMERICS's host cost, ncclscope's own part (issue 13, docs/performance.md): the
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

#include "plugin/numerics_probe.h"

namespace ncclscope::plugin {
namespace {

alignas(64) unsigned char g_pinned[256 * 64];

CUresult Ok0() {
  return CUDA_SUCCESS;
}
CUresult CtxGetCurrent(CUcontext* c) {
  *c = reinterpret_cast<CUcontext>(0x1);
  return CUDA_SUCCESS;
}
CUresult CtxGetDevice(CUdevice* d) {
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult DeviceGetAttribute(int* v, CUdevice_attribute, CUdevice) {
  *v = 132;
  return CUDA_SUCCESS;
}
CUresult ModuleLoadData(CUmodule* m, const void*) {
  *m = reinterpret_cast<CUmodule>(0x2);
  return CUDA_SUCCESS;
}
CUresult ModuleGetFunction(CUfunction* f, CUmodule, const char*) {
  *f = reinterpret_cast<CUfunction>(0x3);
  return CUDA_SUCCESS;
}
CUresult LaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                      unsigned, CUstream, void** params, void**) {
  benchmark::DoNotOptimize(params[0]);
  return CUDA_SUCCESS;
}
CUresult StreamIsCapturing(CUstream, CUstreamCaptureStatus* s) {
  *s = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult MemHostAlloc(void** p, size_t, unsigned int) {
  *p = g_pinned;
  return CUDA_SUCCESS;
}
CUresult MemHostGetDevicePointer(CUdeviceptr* d, void* p, unsigned int) {
  *d = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}
CUresult EventCreate(CUevent* e, unsigned int) {
  *e = reinterpret_cast<CUevent>(0x4);
  return CUDA_SUCCESS;
}
CUresult EventDestroy(CUevent) {
  return Ok0();
}
CUresult EventRecord(CUevent, CUstream) {
  return Ok0();
}
CUresult EventQuery(CUevent) {
  return Ok0();
}

bool LoadInstant(const std::string&, NumericsDriver* d, std::string*) {
  d->ctx_get_current = CtxGetCurrent;
  d->ctx_get_device = CtxGetDevice;
  d->device_get_attribute = DeviceGetAttribute;
  d->module_load_data = ModuleLoadData;
  d->module_get_function = ModuleGetFunction;
  d->launch_kernel = LaunchKernel;
  d->stream_is_capturing = StreamIsCapturing;
  d->mem_host_alloc = MemHostAlloc;
  d->mem_host_get_device_pointer = MemHostGetDevicePointer;
  d->event_create = EventCreate;
  d->event_destroy = EventDestroy;
  d->event_record = EventRecord;
  d->event_query = EventQuery;
  return true;
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
  std::string dir;
  auto ring = MakeRing(&dir);
  NumericsProbe probe(ring.get(), Settings("all", 1'000'000'000), "", LoadInstant);
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
  std::string dir;
  auto ring = MakeRing(&dir);
  const char* mode = state.range(0) == 0 ? "nan" : state.range(0) == 1 ? "checksum" : "all";
  NumericsProbe probe(ring.get(), Settings(mode, 1), "", LoadInstant);
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
