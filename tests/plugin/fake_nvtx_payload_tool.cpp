// A stand-in for an NVTX tool that serves the payload extension (as Nsight Systems does), for the
// NCCL payload tests: counts NCCL-domain pushes, schema registrations and pops with payload, and at
// each domain push asks libncclscope.so (which called it from inside its own push callback) for
// the thread's current NCCL call, as a profiler event inside the API call would.
#define NVTX_NO_IMPL
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <atomic>
#include <cstdint>

namespace {

using CurrentCall = int (*)(unsigned long long*, long long*);

std::atomic<int> g_domain_pushes{0};
std::atomic<int> g_schema_registers{0};
std::atomic<int> g_pop_payloads{0};
std::atomic<uintptr_t> g_next_handle{0x2000};
constexpr int kMaxSeen = 64;
long long g_seen[kMaxSeen][7];  // per push: has a call, then the call's six fields
std::atomic<int> g_seen_count{0};

CurrentCall Probe() {
  static CurrentCall fn = [] {
    void* h = dlopen(PROBE_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
    return h != nullptr ? reinterpret_cast<CurrentCall>(dlsym(h, "ncclscopeNvtxNcclPayloads"))
                        : nullptr;
  }();
  return fn;
}

nvtxDomainHandle_t CreateA(const char*) {
  return reinterpret_cast<nvtxDomainHandle_t>(g_next_handle.fetch_add(16));
}
nvtxStringHandle_t RegisterA(nvtxDomainHandle_t, const char*) {
  return reinterpret_cast<nvtxStringHandle_t>(g_next_handle.fetch_add(16));
}
int DomainPush(nvtxDomainHandle_t, const nvtxEventAttributes_t*) {
  const int i = g_seen_count.fetch_add(1);
  if (i < kMaxSeen && Probe() != nullptr) g_seen[i][0] = Probe()(nullptr, &g_seen[i][1]);
  return g_domain_pushes.fetch_add(1) + 200;
}
int DomainPop(nvtxDomainHandle_t) {
  return 200;
}
uint64_t SchemaRegister(nvtxDomainHandle_t, const nvtxPayloadSchemaAttr_t* attr) {
  g_schema_registers.fetch_add(1);
  return attr != nullptr ? attr->schemaId : 0;
}
int PopPayload(nvtxDomainHandle_t, const nvtxPayloadData_t*, size_t) {
  g_pop_payloads.fetch_add(1);
  return 300;  // the tool's own value: the program must see it
}

void Fill(NvtxGetExportTableFunc_t get, unsigned cbid, NvtxFunctionPointer fn) {
  const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (cb == nullptr || cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) == 0) {
    return;
  }
  if (cbid < size && table[cbid] != nullptr) *table[cbid] = fn;
}

template <typename F>
NvtxFunctionPointer Fn(F f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get) {
  Fill(get, NVTX_CBID_CORE2_DomainCreateA, Fn(&CreateA));
  Fill(get, NVTX_CBID_CORE2_DomainRegisterStringA, Fn(&RegisterA));
  Fill(get, NVTX_CBID_CORE2_DomainRangePushEx, Fn(&DomainPush));
  Fill(get, NVTX_CBID_CORE2_DomainRangePop, Fn(&DomainPop));
  return 1;
}

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(
    nvtxExtModuleInfo_t* info) {
  if (info == nullptr || info->moduleId != NVTX_EXT_PAYLOAD_MODULEID || info->segmentsCount < 1) {
    return 0;
  }
  intptr_t* slots = info->segments[0].functionSlots;
  slots[NVTX3EXT_CBID_nvtxPayloadSchemaRegister] = reinterpret_cast<intptr_t>(&SchemaRegister);
  slots[NVTX3EXT_CBID_nvtxRangePopPayload] = reinterpret_cast<intptr_t>(&PopPayload);
  return 1;
}

// Domain pushes, schema registrations, pops with payload; the current call seen at push i
// (has_call, then OpType, commHash, bytes, root, peer, redop). Returns the pushes seen.
extern "C" __attribute__((visibility("default"))) int fake_nvtx_payload_counts(int out[3]) {
  out[0] = g_domain_pushes.load();
  out[1] = g_schema_registers.load();
  out[2] = g_pop_payloads.load();
  return g_seen_count.load();
}
extern "C" __attribute__((visibility("default"))) const long long* fake_nvtx_payload_seen(int i) {
  return i >= 0 && i < kMaxSeen ? g_seen[i] : nullptr;
}
