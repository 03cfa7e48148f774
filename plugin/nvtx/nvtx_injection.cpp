// The entry points NVTX looks up in an injection library, and how ncclscope attaches to each NVTX
// instance of the process: every library that includes the NVTX headers (NCCL, PyTorch, the
// application) has its own instance, and each calls InitializeInjectionNvtx2 once, with its own
// export table. See nvtx3/nvtxDetail/nvtxInit.h for the loader and nvtxImpl.h for the tables.
#include "plugin/nvtx/nvtx_injection.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "plugin/core/config.h"
#include "plugin/core/export.h"
#include "plugin/core/warn.h"
#include "plugin/nvtx/nvtx_callbacks.h"
#include "plugin/nvtx/nvtx_contexts.h"
#include "plugin/nvtx/nvtx_nccl_payload_ext.h"
#include "plugin/nvtx/nvtx_registry.h"
#include "plugin/nvtx/nvtx_step_pattern.h"

namespace ncclscope::plugin {
namespace {

using ExtensionInit = int (*)(void* module_info);

struct InjectionState {
  bool record = true;
  NvtxInitializeInjectionNvtxFunc_t forward_init = nullptr;
  ExtensionInit forward_ext = nullptr;
};

std::once_flag g_setup_once;
InjectionState g_state;
std::mutex g_attach_mutex;  // one instance attaches at a time (tables and g_nvtx_next)

// Whether path names this very library (a user who set NVTX_INJECTION64_PATH to it already).
bool IsThisLibrary(void* handle) {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&NvtxMarkVerdict), &self) == 0) return false;
  void* own = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (own != nullptr) dlclose(own);
  return own == handle;
}

void LoadForward(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    Warn(
        "NVTX tool '%s' (NCCLSCOPE_NVTX_FORWARD) does not load (%s); ncclscope records NVTX "
        "ranges alone and that tool sees none",
        path, dlerror());
    return;
  }
  if (IsThisLibrary(h)) {
    dlclose(h);
    return;
  }
  g_state.forward_init =
      reinterpret_cast<NvtxInitializeInjectionNvtxFunc_t>(dlsym(h, "InitializeInjectionNvtx2"));
  g_state.forward_ext =
      reinterpret_cast<ExtensionInit>(dlsym(h, "InitializeInjectionNvtxExtension"));
  if (g_state.forward_init == nullptr) {
    Warn(
        "NVTX tool '%s' (NCCLSCOPE_NVTX_FORWARD) exports no InitializeInjectionNvtx2; "
        "ncclscope records NVTX ranges alone and that tool sees none",
        path);
  }
}

// Reads NCCLSCOPE_NVTX* through the configuration table, as the runtime reads every variable. A
// value the table refuses is the runtime's to warn about, once, when it parses the same table at
// the first NCCL call; only a step pattern of the right type but wrong form is warned about here.
void Setup() {
  std::vector<std::string> table_warnings;
  const Config config =
      ParseConfig([](const char* name) { return std::getenv(name); }, &table_warnings);
  g_state.record = config.nvtx;
  if (config.nvtx_step_pattern != kDefaultStepPattern) {
    StepPattern p{};
    std::string error;
    if (ParseStepPattern(config.nvtx_step_pattern, &p, &error)) {
      SetActiveStepPattern(p);
    } else {
      Warn("NCCLSCOPE_NVTX_STEP_PATTERN='%s': %s; using the default '%s'",
           config.nvtx_step_pattern.c_str(), error.c_str(), kDefaultStepPattern);
    }
  }
  if (!config.nvtx_forward.empty()) LoadForward(config.nvtx_forward.c_str());
}

// Attaches to one NVTX instance: lets the forwarded tool fill the instance's tables first, then
// keeps the functions it installed (only slots it changed: before it, a slot holds the
// instance's own lazy-init function, which must never be called from here) and puts ours in.
int Attach(NvtxGetExportTableFunc_t get) {
  const auto* callbacks =
      get != nullptr ? static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS))
                     : nullptr;
  const NvtxCallbackModule modules[] = {NVTX_CB_MODULE_CORE, NVTX_CB_MODULE_CORE2};
  NvtxFunctionTable tables[2] = {nullptr, nullptr};
  unsigned sizes[2] = {0, 0};
  NvtxFunctionPointer before[2][32] = {};
  const bool usable = callbacks != nullptr &&
                      callbacks->struct_size >= sizeof(NvtxExportTableCallbacks) &&
                      callbacks->GetModuleFunctionTable != nullptr;
  for (int m = 0; usable && m < 2; ++m) {
    if (callbacks->GetModuleFunctionTable(modules[m], &tables[m], &sizes[m]) == 0) {
      tables[m] = nullptr;
      continue;
    }
    for (unsigned i = 0; tables[m] != nullptr && i < sizes[m] && i < 32; ++i) {
      if (tables[m][i] != nullptr) before[m][i] = *tables[m][i];
    }
  }
  int forwarded = 0;
  if (g_state.forward_init != nullptr) forwarded = g_state.forward_init(get);
  if (!g_state.record || !usable) return forwarded;
  bool installed = false;
  for (int m = 0; m < 2; ++m) {
    if (tables[m] == nullptr) continue;
    unsigned count = 0;
    const NvtxHook* hooks = NvtxHooks(modules[m], &count);
    for (unsigned k = 0; k < count; ++k) {
      const NvtxHook& h = hooks[k];
      if (h.cbid >= sizes[m] || h.cbid >= 32 || tables[m][h.cbid] == nullptr) continue;
      NvtxFunctionPointer* slot = tables[m][h.cbid];
      if (forwarded != 0 && *slot != before[m][h.cbid] && *slot != nullptr && *h.next == nullptr) {
        *h.next = *slot;
      }
      if (h.fn != nullptr) {
        *slot = h.fn;
        installed = true;
      }
    }
  }
  if (installed) g_nvtx_recording.store(true, std::memory_order_release);
  return installed || forwarded != 0 ? 1 : 0;
}

}  // namespace

void NvtxMarkVerdict(const char* text) noexcept {
  static std::atomic<nvtxDomainHandle_t> domain{nullptr};
  if (g_nvtx_next.create_a == nullptr || g_nvtx_next.domain_mark == nullptr) return;
  nvtxDomainHandle_t d = domain.load(std::memory_order_acquire);
  if (d == nullptr) {
    d = g_nvtx_next.create_a("ncclscope");
    domain.store(d, std::memory_order_release);
  }
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = 0xFFE53935u;  // red: a verdict, not a range of the program
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = text;
  g_nvtx_next.domain_mark(d, &a);
}

}  // namespace ncclscope::plugin

using ncclscope::plugin::Attach;
using ncclscope::plugin::g_attach_mutex;
using ncclscope::plugin::g_setup_once;
using ncclscope::plugin::g_state;
using ncclscope::plugin::Setup;

// Called by each NVTX instance on its first NVTX call. Returns non-zero when ncclscope (or the
// tool it forwards to) attached; zero makes that instance's calls no-ops. Never throws.
NCCLSCOPE_API int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  try {
    std::call_once(g_setup_once, Setup);
    std::lock_guard<std::mutex> lock(g_attach_mutex);
    return Attach(get);
  } catch (...) {
    return 0;
  }
}

// NVTX extensions are the forwarded tool's to serve, except two functions of the payload
// extension that NCCL's ranges use (schema registration, pop with payload), which ncclscope
// records first (nvtx_nccl_payload_ext.h); without a tool, the rest stay no-ops.
NCCLSCOPE_API int InitializeInjectionNvtxExtension(void* module_info) {
  try {
    std::call_once(g_setup_once, Setup);
    return ncclscope::plugin::AttachNvtxExtension(module_info, g_state.forward_ext, g_state.record);
  } catch (...) {
    return 0;
  }
}

// For tests and diagnostics: how many NCCL-domain ranges the injection saw and the newest one's
// name, written into buf (NUL-terminated). Returns the count. Thread-safe.
NCCLSCOPE_API unsigned long long ncclscopeNvtxNcclRanges(char* buf, size_t cap) {
  if (buf != nullptr) ncclscope::plugin::LastNcclRange(buf, cap);
  return ncclscope::plugin::NcclRangesSeen();
}
