#include "plugin/nvtx/nvtx_callbacks.h"

#include <atomic>
#include <cstring>

#include "plugin/nvtx/nvtx_contexts.h"
#include "plugin/nvtx/nvtx_nccl_payload_calls.h"
#include "plugin/nvtx/nvtx_range_stack.h"
#include "plugin/nvtx/nvtx_registry.h"

namespace ncclscope::plugin {

NvtxNext g_nvtx_next;

namespace {

std::atomic<uint64_t> g_range_ids{0};

// The name of an event's message, without copying; len 0 and null for none.
const char* MessageName(const nvtxEventAttributes_t* a, size_t* len, const wchar_t** wide) {
  *len = 0;
  *wide = nullptr;
  if (a == nullptr) return nullptr;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      if (a->message.ascii == nullptr) return nullptr;
      *len = strnlen(a->message.ascii, kNvtxNameChars);
      return a->message.ascii;
    case NVTX_MESSAGE_TYPE_UNICODE:
      *wide = a->message.unicode;
      return nullptr;
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      uint8_t n = 0;
      const char* s = RegisteredString(a->message.registered, &n);
      *len = n;
      return s;
    }
    default:
      return nullptr;
  }
}

int PushAttributes(uint8_t domain, const nvtxEventAttributes_t* a) {
  if (a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_ASCII) {
    return NvtxPushString(ThreadRanges(), a->message.ascii, domain);
  }
  size_t len = 0;
  const wchar_t* wide = nullptr;
  const char* name = MessageName(a, &len, &wide);
  NvtxThreadRanges& t = ThreadRanges();
  return wide != nullptr ? NvtxPushWide(t, wide, domain) : NvtxPush(t, name, len, domain);
}

// A range started with nvtxRangeStart: only a step range matters (it may end on another thread).
void NoteStart(const char* name, size_t len, uint64_t id) {
  uint64_t step = 0;
  if (name != nullptr && MatchStep(ActiveStepPattern(), name, len, &step)) SetRangeStep(step, id);
}

uint64_t NextRangeId() {
  return g_range_ids.fetch_add(1, std::memory_order_relaxed) + 1;
}

int PushA(const char* message) {
  const int level = NvtxPushString(ThreadRanges(), message, kDefaultDomain);
  return g_nvtx_next.push_a != nullptr ? g_nvtx_next.push_a(message) : level;
}

int PushW(const wchar_t* message) {
  const int level = NvtxPushWide(ThreadRanges(), message, kDefaultDomain);
  return g_nvtx_next.push_w != nullptr ? g_nvtx_next.push_w(message) : level;
}

int PushEx(const nvtxEventAttributes_t* a) {
  const int level = PushAttributes(kDefaultDomain, a);
  return g_nvtx_next.push_ex != nullptr ? g_nvtx_next.push_ex(a) : level;
}

int Pop() {
  const int level = NvtxPop(ThreadRanges(), kDefaultDomain);
  return g_nvtx_next.pop != nullptr ? g_nvtx_next.pop() : level;
}

nvtxRangeId_t StartA(const char* message) {
  const uint64_t id = g_nvtx_next.start_a != nullptr ? g_nvtx_next.start_a(message) : NextRangeId();
  NoteStart(message, message != nullptr ? strnlen(message, kNvtxNameChars) : 0, id);
  return id;
}

nvtxRangeId_t StartW(const wchar_t* message) {
  return g_nvtx_next.start_w != nullptr ? g_nvtx_next.start_w(message) : NextRangeId();
}

nvtxRangeId_t StartEx(const nvtxEventAttributes_t* a) {
  const uint64_t id = g_nvtx_next.start_ex != nullptr ? g_nvtx_next.start_ex(a) : NextRangeId();
  size_t len = 0;
  const wchar_t* wide = nullptr;
  const char* name = MessageName(a, &len, &wide);  // sets len: not in the same call's arguments
  NoteStart(name, len, id);
  return id;
}

void End(nvtxRangeId_t id) {
  ClearRangeStep(id);
  if (g_nvtx_next.end != nullptr) g_nvtx_next.end(id);
}

// Notes one of NCCL's own ranges (nvtx_registry.h) without resolving its name: NCCL names them
// with registered strings.
void NoteNccl(const nvtxEventAttributes_t* a) {
  if (a == nullptr) {
    NoteNcclRange(nullptr, nullptr);
  } else if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) {
    NoteNcclRange(nullptr, a->message.registered);
  } else {
    NoteNcclRange(a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : nullptr, nullptr);
  }
}

int DomainPush(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  const uint8_t slot = DomainSlot(domain);
  int level = -1;
  if (slot == kNcclDomain) {
    NoteNccl(a);
    level = NcclRangePush(a);  // keeps the call's arguments, when its payload is 2.28.9's
  } else if (slot < kMaxDomains) {
    level = PushAttributes(slot, a);
  }
  return g_nvtx_next.domain_push != nullptr ? g_nvtx_next.domain_push(domain, a) : level;
}

int DomainPop(nvtxDomainHandle_t domain) {
  const uint8_t slot = DomainSlot(domain);
  int level = -1;
  if (slot == kNcclDomain) {
    level = NcclRangePop();
  } else if (slot < kMaxDomains) {
    level = NvtxPop(ThreadRanges(), slot);
  }
  return g_nvtx_next.domain_pop != nullptr ? g_nvtx_next.domain_pop(domain) : level;
}

nvtxRangeId_t DomainStart(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  const uint64_t id =
      g_nvtx_next.domain_start != nullptr ? g_nvtx_next.domain_start(domain, a) : NextRangeId();
  if (DomainSlot(domain) < kMaxDomains) {
    size_t len = 0;
    const wchar_t* wide = nullptr;
    const char* name = MessageName(a, &len, &wide);
    NoteStart(name, len, id);
  }
  return id;
}

void DomainEnd(nvtxDomainHandle_t domain, nvtxRangeId_t id) {
  ClearRangeStep(id);
  if (g_nvtx_next.domain_end != nullptr) g_nvtx_next.domain_end(domain, id);
}

// Narrows a wide string for the tables (non-ASCII becomes '?').
size_t Narrow(const wchar_t* s, char* out, size_t cap) {
  size_t n = 0;
  for (; s != nullptr && n + 1 < cap && s[n] != 0; ++n) {
    out[n] = s[n] > 0 && s[n] < 0x80 ? static_cast<char>(s[n]) : '?';
  }
  out[n] = '\0';
  return n;
}

nvtxStringHandle_t RegisterA(nvtxDomainHandle_t domain, const char* s) {
  nvtxStringHandle_t h =
      g_nvtx_next.register_a != nullptr
          ? g_nvtx_next.register_a(domain, s)
          : reinterpret_cast<nvtxStringHandle_t>(const_cast<void*>(NewStringHandle()));
  if (s != nullptr) RegisterString(h, s, strnlen(s, kNvtxNameChars));
  return h;
}

nvtxStringHandle_t RegisterW(nvtxDomainHandle_t domain, const wchar_t* s) {
  nvtxStringHandle_t h =
      g_nvtx_next.register_w != nullptr
          ? g_nvtx_next.register_w(domain, s)
          : reinterpret_cast<nvtxStringHandle_t>(const_cast<void*>(NewStringHandle()));
  char narrow[kNvtxNameChars + 1];
  RegisterString(h, narrow, Narrow(s, narrow, sizeof(narrow)));
  return h;
}

nvtxDomainHandle_t CreateA(const char* name) {
  nvtxDomainHandle_t h =
      g_nvtx_next.create_a != nullptr
          ? g_nvtx_next.create_a(name)
          : reinterpret_cast<nvtxDomainHandle_t>(const_cast<void*>(NewStringHandle()));
  if (h != nullptr) RegisterDomain(h, name);
  return h;
}

nvtxDomainHandle_t CreateW(const wchar_t* name) {
  nvtxDomainHandle_t h =
      g_nvtx_next.create_w != nullptr
          ? g_nvtx_next.create_w(name)
          : reinterpret_cast<nvtxDomainHandle_t>(const_cast<void*>(NewStringHandle()));
  char narrow[kNvtxNameChars + 1];
  Narrow(name, narrow, sizeof(narrow));
  if (h != nullptr) RegisterDomain(h, narrow);
  return h;
}

template <typename F>
NvtxFunctionPointer Fn(F f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}
template <typename F>
NvtxFunctionPointer* Slot(F* next) {
  return reinterpret_cast<NvtxFunctionPointer*>(next);
}

const NvtxHook kCoreHooks[] = {
    {NVTX_CBID_CORE_RangePushA, Fn(&PushA), Slot(&g_nvtx_next.push_a)},
    {NVTX_CBID_CORE_RangePushW, Fn(&PushW), Slot(&g_nvtx_next.push_w)},
    {NVTX_CBID_CORE_RangePushEx, Fn(&PushEx), Slot(&g_nvtx_next.push_ex)},
    {NVTX_CBID_CORE_RangePop, Fn(&Pop), Slot(&g_nvtx_next.pop)},
    {NVTX_CBID_CORE_RangeStartA, Fn(&StartA), Slot(&g_nvtx_next.start_a)},
    {NVTX_CBID_CORE_RangeStartW, Fn(&StartW), Slot(&g_nvtx_next.start_w)},
    {NVTX_CBID_CORE_RangeStartEx, Fn(&StartEx), Slot(&g_nvtx_next.start_ex)},
    {NVTX_CBID_CORE_RangeEnd, Fn(&End), Slot(&g_nvtx_next.end)},
};

// DomainMarkEx has no function of ours (null): its slot is only read, for ncclscope's marks.
const NvtxHook kCore2Hooks[] = {
    {NVTX_CBID_CORE2_DomainRangePushEx, Fn(&DomainPush), Slot(&g_nvtx_next.domain_push)},
    {NVTX_CBID_CORE2_DomainRangePop, Fn(&DomainPop), Slot(&g_nvtx_next.domain_pop)},
    {NVTX_CBID_CORE2_DomainRangeStartEx, Fn(&DomainStart), Slot(&g_nvtx_next.domain_start)},
    {NVTX_CBID_CORE2_DomainRangeEnd, Fn(&DomainEnd), Slot(&g_nvtx_next.domain_end)},
    {NVTX_CBID_CORE2_DomainRegisterStringA, Fn(&RegisterA), Slot(&g_nvtx_next.register_a)},
    {NVTX_CBID_CORE2_DomainRegisterStringW, Fn(&RegisterW), Slot(&g_nvtx_next.register_w)},
    {NVTX_CBID_CORE2_DomainCreateA, Fn(&CreateA), Slot(&g_nvtx_next.create_a)},
    {NVTX_CBID_CORE2_DomainCreateW, Fn(&CreateW), Slot(&g_nvtx_next.create_w)},
    {NVTX_CBID_CORE2_DomainMarkEx, nullptr, Slot(&g_nvtx_next.domain_mark)},
};

}  // namespace

const NvtxHook* NvtxHooks(NvtxCallbackModule module, unsigned* count) {
  if (module == NVTX_CB_MODULE_CORE) {
    *count = sizeof(kCoreHooks) / sizeof(kCoreHooks[0]);
    return kCoreHooks;
  }
  *count = sizeof(kCore2Hooks) / sizeof(kCore2Hooks[0]);
  return kCore2Hooks;
}

}  // namespace ncclscope::plugin
