#include "plugin/nvtx/nvtx_nccl_payload_ext.h"

#include <atomic>
#include <cstdint>
#include <mutex>

#include "plugin/core/export.h"
#include "plugin/nvtx/nvtx_nccl_payload.h"
#include "plugin/nvtx/nvtx_nccl_payload_calls.h"
#include "plugin/nvtx/nvtx_range_stack.h"
#include "plugin/nvtx/nvtx_registry.h"

namespace ncclscope::plugin {
namespace {

using SchemaRegisterFn = uint64_t (*)(nvtxDomainHandle_t, const nvtxPayloadSchemaAttr_t*);
using PopPayloadFn = int (*)(nvtxDomainHandle_t, const nvtxPayloadData_t*, size_t);

constexpr size_t kRegisterSlot = NVTX3EXT_CBID_nvtxPayloadSchemaRegister;
constexpr size_t kPopSlot = NVTX3EXT_CBID_nvtxRangePopPayload;
constexpr size_t kMaxSlots = 64;  // NVTX_EXT_PAYLOAD_SLOT_COUNT is 63 in both known versions
// nvtxExtImpl.h's slot states: a slot holding one of these is no function.
constexpr intptr_t kSlotFresh = 0;
constexpr intptr_t kSlotDisabled = 1;

// The forwarded tool's functions (the first instance's, as for the core tables). Written while a
// module attaches, before our function is in its slot.
std::atomic<SchemaRegisterFn> g_next_register{nullptr};
std::atomic<PopPayloadFn> g_next_pop{nullptr};
std::mutex g_ext_mutex;  // one module attaches at a time

uint64_t SchemaRegister(nvtxDomainHandle_t domain, const nvtxPayloadSchemaAttr_t* attr) {
  if (DomainSlot(domain) == kNcclDomain) {
    uint32_t index = kNcclSchemaCount;
    const NcclSchemaCheck check = CheckNcclSchema(attr, &index);
    if (check != NcclSchemaCheck::kNotACall) {
      const bool matches = check == NcclSchemaCheck::kMatches;
      NcclSchemas().Note(index, matches);
      NoteNcclSchemaRegistered(matches);
    }
  }
  if (SchemaRegisterFn next = g_next_register.load(std::memory_order_acquire)) {
    return next(domain, attr);
  }
  // No tool: a static id is the caller's own to use; any other gets what a disabled extension
  // returns.
  if (attr != nullptr && (attr->fieldMask & nvtx_payload::kAttrSchemaId) != 0) {
    return attr->schemaId;
  }
  return static_cast<uint64_t>(static_cast<intptr_t>(-1));
}

// nvtxRangePopPayload ends the domain's innermost range as nvtxDomainRangePop does (NCCL ends its
// creation calls' ranges with it once they succeeded: src/include/nvtx.h,
// ncclOptionalNvtxPayloadRange); the payload itself is not read.
int PopPayload(nvtxDomainHandle_t domain, const nvtxPayloadData_t* data, size_t count) {
  const uint8_t slot = DomainSlot(domain);
  int level = -1;
  if (slot == kNcclDomain) {
    level = NcclRangePop();
  } else if (slot < kMaxDomains) {
    level = NvtxPop(ThreadRanges(), slot);
  }
  if (PopPayloadFn next = g_next_pop.load(std::memory_order_acquire)) {
    return next(domain, data, count);
  }
  return level;
}

// The payload extension's only segment, when module is that extension in a known version.
nvtxExtModuleSegment_t* PayloadSegment(nvtxExtModuleInfo_t* m) noexcept {
  if (m == nullptr || m->structSize < sizeof(nvtxExtModuleInfo_t) ||
      m->moduleId != NVTX_EXT_PAYLOAD_MODULEID ||
      (m->compatId != 0x0103 && m->compatId != 0x0104) || m->segmentsCount < 1 ||
      m->segments == nullptr) {
    return nullptr;
  }
  nvtxExtModuleSegment_t* s = m->segments;
  return s->functionSlots != nullptr && s->slotCount > kPopSlot ? s : nullptr;
}

// Keeps the function the tool put in a slot (one that changed and holds a function).
template <typename F>
void KeepToolFunction(intptr_t now, intptr_t before, std::atomic<F>* next) {
  if (now == before || now == kSlotFresh || now == kSlotDisabled) return;
  if (next->load(std::memory_order_relaxed) == nullptr) {
    next->store(reinterpret_cast<F>(now), std::memory_order_release);
  }
}

}  // namespace

int AttachNvtxExtension(void* module_info, NvtxExtensionInit forward, bool record) noexcept {
  auto* info = static_cast<nvtxExtModuleInfo_t*>(module_info);
  nvtxExtModuleSegment_t* seg = PayloadSegment(info);
  const size_t slots =
      seg == nullptr ? 0 : (seg->slotCount < kMaxSlots ? seg->slotCount : kMaxSlots);
  intptr_t before[kMaxSlots] = {};
  for (size_t i = 0; i < slots; ++i) before[i] = seg->functionSlots[i];
  const int forwarded = forward != nullptr ? forward(module_info) : 0;
  if (!record || seg == nullptr) return forwarded;
  std::lock_guard<std::mutex> lock(g_ext_mutex);
  intptr_t* fn = seg->functionSlots;
  if (forwarded == 0) {
    for (size_t i = 0; i < slots; ++i) fn[i] = before[i];
  } else {
    KeepToolFunction(fn[kRegisterSlot], before[kRegisterSlot], &g_next_register);
    KeepToolFunction(fn[kPopSlot], before[kPopSlot], &g_next_pop);
  }
  fn[kRegisterSlot] = reinterpret_cast<intptr_t>(&SchemaRegister);
  fn[kPopSlot] = reinterpret_cast<intptr_t>(&PopPayload);
  return 1;
}

}  // namespace ncclscope::plugin

// For tests and diagnostics: what the decoder made of NCCL's ranges so far (out[0] decoded calls,
// out[1] refused payloads, out[2] NCCL call schemas registered through the injection, out[3] of
// which differed from 2.28.9's), and the calling thread's current NCCL call (call[0] OpType,
// call[1] commHash, call[2] bytes, call[3] root, call[4] peer, call[5] reduction op). Returns
// whether the thread has a current call. Thread-safe.
NCCLSCOPE_API int ncclscopeNvtxNcclPayloads(unsigned long long out[4], long long call[6]) {
  const ncclscope::plugin::NcclPayloadCounts c = ncclscope::plugin::GetNcclPayloadCounts();
  if (out != nullptr) {
    out[0] = c.decoded;
    out[1] = c.refused;
    out[2] = c.schemas_seen;
    out[3] = c.schemas_differ;
  }
  ncclscope::plugin::NcclCallArgs a;
  if (!ncclscope::plugin::CurrentNcclCallArgs(&a)) return 0;
  if (call != nullptr) {
    call[0] = static_cast<long long>(a.op);
    call[1] = static_cast<long long>(a.comm_hash);
    call[2] = static_cast<long long>(a.bytes);
    call[3] = a.root;
    call[4] = a.peer;
    call[5] = a.redop;
  }
  return 1;
}
