// A stand-in for another NVTX tool (Nsight Systems' injection) that ncclscope forwards to: fills
// a few CORE and CORE2 slots of each NVTX instance with counting functions. Its counters are read
// by the test through fake_nvtx_counts.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstring>

namespace {

std::atomic<int> g_inits{0};
std::atomic<int> g_pushes{0};
std::atomic<int> g_pops{0};
std::atomic<int> g_domain_pushes{0};
std::atomic<int> g_marks{0};
std::atomic<uintptr_t> g_next_handle{0x1000};
char g_last_mark[64];

int PushA(const char*) {
  return g_pushes.fetch_add(1) + 100;  // a level of its own: the app must see the tool's value
}
int Pop() {
  g_pops.fetch_add(1);
  return 100;
}
nvtxDomainHandle_t CreateA(const char*) {
  return reinterpret_cast<nvtxDomainHandle_t>(g_next_handle.fetch_add(16));
}
nvtxStringHandle_t RegisterA(nvtxDomainHandle_t, const char*) {
  return reinterpret_cast<nvtxStringHandle_t>(g_next_handle.fetch_add(16));
}
int DomainPush(nvtxDomainHandle_t, const nvtxEventAttributes_t*) {
  return g_domain_pushes.fetch_add(1);
}
int DomainPop(nvtxDomainHandle_t) {
  return 0;
}
void DomainMark(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) {
  g_marks.fetch_add(1);
  if (a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_ASCII) {
    std::strncpy(g_last_mark, a->message.ascii, sizeof(g_last_mark) - 1);
  }
}

void Fill(NvtxGetExportTableFunc_t get, NvtxCallbackModule module, unsigned cbid,
          NvtxFunctionPointer fn) {
  const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (cb == nullptr || cb->GetModuleFunctionTable(module, &table, &size) == 0) return;
  if (cbid < size && table[cbid] != nullptr) *table[cbid] = fn;
}

template <typename F>
NvtxFunctionPointer Fn(F f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get) {
  g_inits.fetch_add(1);
  Fill(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, Fn(&PushA));
  Fill(get, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, Fn(&Pop));
  Fill(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA, Fn(&CreateA));
  Fill(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringA, Fn(&RegisterA));
  Fill(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, Fn(&DomainPush));
  Fill(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, Fn(&DomainPop));
  Fill(get, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainMarkEx, Fn(&DomainMark));
  return 1;
}

// inits, pushes, pops, domain pushes, marks; the newest mark's text.
extern "C" __attribute__((visibility("default"))) void fake_nvtx_counts(int out[5],
                                                                        const char** last_mark) {
  out[0] = g_inits.load();
  out[1] = g_pushes.load();
  out[2] = g_pops.load();
  out[3] = g_domain_pushes.load();
  out[4] = g_marks.load();
  *last_mark = g_last_mark;
}
