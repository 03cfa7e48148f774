// A minimal NVTX tool for the emulator's NCCL ranges (loaded through NVTX_INJECTION64_PATH): it
// writes one text line per domain creation's use, range push and pop, payload schema and enum
// registration, so a test can compare what the emulated libnccl.so.2 told NVTX with what NCCL
// 2.28.9 tells it. A push's payload is decoded through the schema registered for its id, so the
// line shows the values at the offsets the registration announced.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

std::mutex g_mu;
std::string g_log;
std::atomic<uintptr_t> g_next{0x1000};
std::map<uintptr_t, std::string> g_names;  // domain and string handles -> text
std::map<uint64_t, std::vector<nvtxPayloadSchemaEntry_t>> g_schemas;

void Line(const std::string& s) {
  g_log += s;
  g_log += '\n';
}

std::string NameOf(const void* handle) {
  const auto it = g_names.find(reinterpret_cast<uintptr_t>(handle));
  return it == g_names.end() ? std::string("?") : it->second;
}

uintptr_t Remember(const char* text) {
  const uintptr_t h = g_next.fetch_add(16);
  g_names[h] = text != nullptr ? text : "(null)";
  return h;
}

nvtxDomainHandle_t CreateA(const char* name) {
  const std::lock_guard<std::mutex> lock(g_mu);
  return reinterpret_cast<nvtxDomainHandle_t>(Remember(name));
}

nvtxStringHandle_t RegisterA(nvtxDomainHandle_t, const char* text) {
  const std::lock_guard<std::mutex> lock(g_mu);
  return reinterpret_cast<nvtxStringHandle_t>(Remember(text));
}

// "v1,v2,..." of the payload read at the registered entries (8-byte or 4-byte by entry type).
std::string Decode(const nvtxPayloadData_t& d) {
  const auto it = g_schemas.find(d.schemaId);
  if (it == g_schemas.end() || d.payload == nullptr) return "unregistered";
  std::string out;
  for (const auto& e : it->second) {
    const auto* p = static_cast<const unsigned char*>(d.payload) + e.offset;
    char buf[32];
    if (e.type == NVTX_PAYLOAD_ENTRY_TYPE_UINT64 || e.type == NVTX_PAYLOAD_ENTRY_TYPE_SIZE) {
      uint64_t v = 0;
      std::memcpy(&v, p, sizeof v);
      std::snprintf(buf, sizeof buf, "%" PRIu64, v);
    } else {
      int32_t v = 0;
      std::memcpy(&v, p, sizeof v);
      std::snprintf(buf, sizeof buf, "%d", v);
    }
    if (!out.empty()) out += ',';
    out += buf;
  }
  return out;
}

int DomainPush(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  const std::lock_guard<std::mutex> lock(g_mu);
  std::string line = "push " + NameOf(domain) + " ";
  line += a->messageType == NVTX_MESSAGE_TYPE_REGISTERED ? NameOf(a->message.registered)
                                                         : std::string("(not registered)");
  char buf[96];
  if (a->payloadType == NVTX_PAYLOAD_TYPE_EXT) {
    const auto* d =
        reinterpret_cast<const nvtxPayloadData_t*>(static_cast<uintptr_t>(a->payload.ullValue));
    std::snprintf(buf, sizeof buf, " ext n=%d id=%" PRIu64 " size=%zu ", a->reserved0, d->schemaId,
                  d->size);
    line += buf + Decode(*d);
  } else {
    std::snprintf(buf, sizeof buf, " payloadType=%d", a->payloadType);
    line += buf;
  }
  Line(line);
  return 0;
}

int DomainPop(nvtxDomainHandle_t domain) {
  const std::lock_guard<std::mutex> lock(g_mu);
  Line("pop " + NameOf(domain));
  return 0;
}

uint64_t SchemaRegister(nvtxDomainHandle_t domain, const nvtxPayloadSchemaAttr_t* a) {
  const std::lock_guard<std::mutex> lock(g_mu);
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "schema %s mask=%" PRIu64 " type=%" PRIu64 " id=%" PRIu64 " entries=%zu size=%zu",
                NameOf(domain).c_str(), a->fieldMask, a->type, a->schemaId, a->numEntries,
                a->payloadStaticSize);
  std::string line = buf;
  std::vector<nvtxPayloadSchemaEntry_t> entries(a->entries, a->entries + a->numEntries);
  for (const auto& e : entries) {
    std::snprintf(buf, sizeof buf, " %" PRIu64 "@%" PRIu64 ":%s", e.type, e.offset,
                  e.name != nullptr ? e.name : "");
    line += buf;
  }
  g_schemas[a->schemaId] = entries;
  Line(line);
  return a->schemaId;
}

uint64_t EnumRegister(nvtxDomainHandle_t domain, const nvtxPayloadEnumAttr_t* a) {
  const std::lock_guard<std::mutex> lock(g_mu);
  char buf[160];
  std::snprintf(buf, sizeof buf, "enum %s mask=%" PRIu64 " id=%" PRIu64 " size=%zu",
                NameOf(domain).c_str(), a->fieldMask, a->schemaId, a->sizeOfEnum);
  std::string line = buf;
  for (size_t i = 0; i < a->numEntries; ++i) {
    std::snprintf(buf, sizeof buf, " %s=%" PRIu64, a->entries[i].name, a->entries[i].value);
    line += buf;
  }
  Line(line);
  return a->schemaId;
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
  slots[NVTX3EXT_CBID_nvtxPayloadEnumRegister] = reinterpret_cast<intptr_t>(&EnumRegister);
  return 1;
}

// Everything logged so far, one event a line (a copy: the log keeps growing).
extern "C" __attribute__((visibility("default"))) char* simnvtx_log() {
  const std::lock_guard<std::mutex> lock(g_mu);
  return strdup(g_log.c_str());
}
