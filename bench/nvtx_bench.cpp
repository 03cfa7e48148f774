// Cost of one NVTX push/pop pair through libncclscope.so as the NVTX injection (the path every
// nvtxRangePushA/nvtxRangePop of a training loop takes while `ncclscope run` injects it), against
// the same calls with no injection, and the allocations they make (none are allowed: design.md
// rule 2). NVTX_INJECTION64_PATH is set in main before the first NVTX call of this process.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

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

// NCCL's own ranges: one push/pop of its "NCCL" domain per API call, as NCCL 2.28.9
// makes them (src/include/nvtx.h NVTX3_FUNC_WITH_PARAMS: a registered name, one nvtxPayloadData_t
// of schema (1 << 24) + N; src/include/nvtx_payload_schemas.h: AllReduce's {commHash, bytes, op}),
// its schema registered first. Arg 0: ncclGroupStart's shape (no payload), 1: ncclAllReduce's
// (decoded), 2: a payload of an id 2.28.9 does not have (refused).
struct NcclAllReducePayload {
  uint64_t comm;
  size_t bytes;
  int op;
};
void BM_NcclDomainPushPop(benchmark::State& state) {
  static nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL");
  static nvtxStringHandle_t name = nvtxDomainRegisterStringA(nccl, "ncclAllReduce");
  static const bool registered = [] {
    nvtxPayloadSchemaEntry_t entries[] = {
        {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "comm", nullptr, 0, 0, nullptr, nullptr},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "bytes", nullptr, 0, 8, nullptr, nullptr},
        {0, (1u << 24) + 20, "op", nullptr, 0, 16, nullptr, nullptr}};
    nvtxPayloadSchemaAttr_t attr{};
    attr.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
    attr.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
    attr.entries = entries;
    attr.numEntries = 3;
    attr.payloadStaticSize = sizeof(NcclAllReducePayload);
    attr.schemaId = (1u << 24) + 5;
    nvtxPayloadSchemaRegister(nccl, &attr);
    return true;
  }();
  (void)registered;
  const NcclAllReducePayload payload{0xfeedull, 4096, 2};
  nvtxPayloadData_t data[] = {
      {(1u << 24) + (state.range(0) == 2 ? 25 : 5), sizeof(payload), &payload}};
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = name;
  if (state.range(0) != 0) {
    a.payloadType = NVTX_PAYLOAD_TYPE_EXT;
    a.reserved0 = 1;
    a.payload.ullValue = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(data));
  }
  nvtxRangePushA("step 1");
  const long before = t_allocations;
  for (auto _ : state) {
    nvtxDomainRangePushEx(nccl, &a);
    nvtxDomainRangePop(nccl);
  }
  state.counters["allocations"] = static_cast<double>(t_allocations - before);
  nvtxRangePop();
}
BENCHMARK(BM_NcclDomainPushPop)->Arg(0)->Arg(1)->Arg(2);

}  // namespace

int main(int argc, char** argv) {
  // NCCLSCOPE_BENCH_NO_INJECTION=1 measures NVTX with no tool (the baseline: a null pointer test).
  // NCCLSCOPE_BENCH_PROBE=path measures another build of the library (an A/B of one change).
  const char* probe_path = std::getenv("NCCLSCOPE_BENCH_PROBE");
  if (probe_path == nullptr) probe_path = PROBE_LIBRARY;
  if (std::getenv("NCCLSCOPE_BENCH_NO_INJECTION") == nullptr) {
    setenv("NVTX_INJECTION64_PATH", probe_path, 1);
  } else {
    unsetenv("NVTX_INJECTION64_PATH");
  }
  nvtxRangePushA("init");  // attaches (or not) before timing
  nvtxRangePop();
  void* probe = dlopen(probe_path, RTLD_NOW | RTLD_NOLOAD);
  std::printf("injection: %s\n", probe != nullptr ? probe_path : "none");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
