#include "plugin/nvtx/nvtx_nccl_payload.h"

#include <cstring>

namespace ncclscope::plugin {
namespace {

using trace::OpType;

// The entry type NCCL gives its reduction op: a static enum id of its own (src/include/nvtx.h,
// NVTX_PAYLOAD_ENTRY_NCCL_REDOP), a 4-byte ncclRedOp_t.
constexpr uint64_t kRedOpEntryType = kNcclSchemaBase + 20;
constexpr int8_t kAbsent = -1;

// One call schema of NCCL 2.28.9 (src/include/nvtx_payload_schemas.h): a plain struct whose first
// members are the communicator's hash (uint64_t at 0) and the size in bytes (size_t at 8), then
// at most two 4-byte members: root or peer (int), reduction op (ncclRedOp_t).
struct CallLayout {
  OpType op;      // kUnknown: not a call schema
  uint8_t size;   // sizeof the struct: the payload's size and the schema's static size
  int8_t int_at;  // offset of root/peer, kAbsent when none
  int8_t op_at;   // offset of the reduction op, kAbsent when none
  bool peer;      // int_at holds the peer (Send, Recv), not the root
};

// Indexed by N of the schema id (1 << 24) + N (src/include/nvtx.h, NVTX_SID_*).
constexpr CallLayout kLayouts[kNcclSchemaCount] = {
    {OpType::kUnknown, 0, kAbsent, kAbsent, false},     // 0 CommInitRank
    {OpType::kUnknown, 0, kAbsent, kAbsent, false},     // 1 CommInitAll
    {OpType::kUnknown, 0, kAbsent, kAbsent, false},     // 2 CommDestroy
    {OpType::kUnknown, 0, kAbsent, kAbsent, false},     // 3 CommAbort
    {OpType::kAllGather, 16, kAbsent, kAbsent, false},  // 4
    {OpType::kAllReduce, 24, kAbsent, 16, false},       // 5
    {OpType::kBroadcast, 24, 16, kAbsent, false},       // 6
    {OpType::kReduceScatter, 24, kAbsent, 16, false},   // 7
    {OpType::kReduce, 24, 16, 20, false},               // 8
    {OpType::kSend, 24, 16, kAbsent, true},             // 9
    {OpType::kRecv, 24, 16, kAbsent, true},             // 10
    {OpType::kUnknown, 0, kAbsent, kAbsent, false},     // 11 CommInitRankConfig
    {OpType::kUnknown, 0, kAbsent, kAbsent, false},     // 12 CommInitRankScalable
    {OpType::kUnknown, 0, kAbsent, kAbsent, false},     // 13 CommSplit
    {OpType::kUnknown, 0, kAbsent, kAbsent, false},     // 14 CommFinalize
    {OpType::kUnknown, 0, kAbsent, kAbsent, false},     // 15 CommShrink
    {OpType::kAlltoAll, 16, kAbsent, kAbsent, false},   // 16
    {OpType::kGather, 24, 16, kAbsent, false},          // 17
    {OpType::kScatter, 24, 16, kAbsent, false},         // 18
    {OpType::kUnknown, 0, kAbsent, kAbsent, false},     // 19 CommRevoke
};

static_assert(sizeof(size_t) == 8 && sizeof(int) == 4,
              "the layouts above are NCCL's on LP64 platforms");
static_assert(nvtx_payload::kTypeExt == NVTX_PAYLOAD_TYPE_EXT &&
              nvtx_payload::kEntryInt == NVTX_PAYLOAD_ENTRY_TYPE_INT &&
              nvtx_payload::kEntryUint64 == NVTX_PAYLOAD_ENTRY_TYPE_UINT64 &&
              nvtx_payload::kEntrySize == NVTX_PAYLOAD_ENTRY_TYPE_SIZE &&
              nvtx_payload::kSchemaTypeStatic == NVTX_PAYLOAD_SCHEMA_TYPE_STATIC);
static_assert(nvtx_payload::kAttrType == NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE &&
              nvtx_payload::kAttrEntries == NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES &&
              nvtx_payload::kAttrNumEntries == NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES &&
              nvtx_payload::kAttrStaticSize == NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE &&
              nvtx_payload::kAttrSchemaId == NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID);
// nvtxPayloadData_t, nvtxPayloadSchemaEntry_t and nvtxPayloadSchemaAttr_t as 2.28.9's header
// lays them out (LP64).
static_assert(sizeof(nvtxPayloadData_t) == 24 && offsetof(nvtxPayloadData_t, payload) == 16);
static_assert(sizeof(nvtxPayloadSchemaEntry_t) == 64 &&
              offsetof(nvtxPayloadSchemaEntry_t, type) == 8 &&
              offsetof(nvtxPayloadSchemaEntry_t, arrayOrUnionDetail) == 32 &&
              offsetof(nvtxPayloadSchemaEntry_t, offset) == 40);
static_assert(offsetof(nvtxPayloadSchemaAttr_t, type) == 16 &&
              offsetof(nvtxPayloadSchemaAttr_t, entries) == 32 &&
              offsetof(nvtxPayloadSchemaAttr_t, numEntries) == 40 &&
              offsetof(nvtxPayloadSchemaAttr_t, payloadStaticSize) == 48 &&
              offsetof(nvtxPayloadSchemaAttr_t, schemaId) == 64);

// The index N of an NCCL static schema id, or kNcclSchemaCount.
uint32_t IndexOf(uint64_t schema_id) noexcept {
  if (schema_id < kNcclSchemaBase || schema_id >= kNcclSchemaBase + kNcclSchemaCount) {
    return kNcclSchemaCount;
  }
  return static_cast<uint32_t>(schema_id - kNcclSchemaBase);
}

// The entries (type, offset) 2.28.9 registers for a layout, in its order (by offset). Returns
// their count.
struct Entry {
  uint64_t type;
  uint64_t offset;
};
uint32_t ExpectedEntries(const CallLayout& l, Entry out[4]) noexcept {
  uint32_t n = 0;
  out[n++] = {nvtx_payload::kEntryUint64, 0};
  out[n++] = {nvtx_payload::kEntrySize, 8};
  if (l.int_at != kAbsent) out[n++] = {nvtx_payload::kEntryInt, static_cast<uint64_t>(l.int_at)};
  if (l.op_at != kAbsent) out[n++] = {kRedOpEntryType, static_cast<uint64_t>(l.op_at)};
  return n;
}

// The fields nvtx.h's payload_schema sets: type, entries, their count, static size, schema id.
constexpr uint64_t kRequiredFields = nvtx_payload::kAttrType | nvtx_payload::kAttrEntries |
                                     nvtx_payload::kAttrNumEntries | nvtx_payload::kAttrStaticSize |
                                     nvtx_payload::kAttrSchemaId;
constexpr size_t kMaxEntriesRead = 8;

}  // namespace

void NcclSchemaTable::Note(uint32_t index, bool matches) noexcept {
  if (index >= kNcclSchemaCount) return;
  if (!matches) {
    state_[index].store(kDiffers, std::memory_order_release);
    return;
  }
  uint8_t unseen = kUnseen;
  state_[index].compare_exchange_strong(unseen, kMatches, std::memory_order_acq_rel);
}

NcclSchemaTable::State NcclSchemaTable::Of(uint32_t index) const noexcept {
  return index < kNcclSchemaCount
             ? static_cast<State>(state_[index].load(std::memory_order_acquire))
             : kDiffers;
}

// Constant-initialized: the push path reads it with no guard.
NcclSchemaTable g_nccl_schemas;

NcclSchemaTable& NcclSchemas() noexcept {
  return g_nccl_schemas;
}

NcclSchemaCheck CheckNcclSchema(const nvtxPayloadSchemaAttr_t* attr, uint32_t* index) noexcept {
  if (attr == nullptr || (attr->fieldMask & nvtx_payload::kAttrSchemaId) == 0) {
    return NcclSchemaCheck::kNotACall;
  }
  const uint32_t i = IndexOf(attr->schemaId);
  if (i >= kNcclSchemaCount || kLayouts[i].op == OpType::kUnknown) {
    return NcclSchemaCheck::kNotACall;
  }
  *index = i;
  const CallLayout& l = kLayouts[i];
  Entry want[4];
  const uint32_t n = ExpectedEntries(l, want);
  if ((attr->fieldMask & kRequiredFields) != kRequiredFields ||
      attr->type != nvtx_payload::kSchemaTypeStatic || attr->payloadStaticSize != l.size ||
      attr->numEntries != n || attr->numEntries > kMaxEntriesRead || attr->entries == nullptr) {
    return NcclSchemaCheck::kDiffers;
  }
  for (uint32_t k = 0; k < n; ++k) {
    const nvtxPayloadSchemaEntry_t& e = attr->entries[k];
    if (e.type != want[k].type || e.offset != want[k].offset || e.arrayOrUnionDetail != 0 ||
        e.flags != 0) {
      return NcclSchemaCheck::kDiffers;
    }
  }
  return NcclSchemaCheck::kMatches;
}

NcclDecode DecodeNcclPayload(const nvtxEventAttributes_t* a, const NcclSchemaTable& schemas,
                             NcclCallArgs* out) noexcept {
  constexpr size_t kPayloadEnd = offsetof(nvtxEventAttributes_t, payload) + sizeof(a->payload);
  if (a == nullptr || a->size < kPayloadEnd || a->payloadType != nvtx_payload::kTypeExt) {
    return NcclDecode::kNoPayload;
  }
  // NCCL attaches exactly one nvtxPayloadData_t (nvtx3.hpp: reserved0 = 1).
  const auto* data =
      reinterpret_cast<const nvtxPayloadData_t*>(static_cast<uintptr_t>(a->payload.ullValue));
  if (a->reserved0 != 1 || data == nullptr) return NcclDecode::kRefused;
  const uint32_t i = IndexOf(data->schemaId);
  if (i >= kNcclSchemaCount) return NcclDecode::kRefused;
  const CallLayout& l = kLayouts[i];
  if (l.op == OpType::kUnknown) return NcclDecode::kNotACall;
  if (data->size != l.size || data->payload == nullptr ||
      schemas.Of(i) == NcclSchemaTable::kDiffers) {
    return NcclDecode::kRefused;
  }
  // Copied out member by member at 2.28.9's offsets: NCCL's struct is its own, not ours.
  const auto* p = static_cast<const unsigned char*>(data->payload);
  NcclCallArgs args;
  args.op = l.op;
  std::memcpy(&args.comm_hash, p, sizeof(args.comm_hash));
  std::memcpy(&args.bytes, p + 8, sizeof(args.bytes));
  if (l.int_at != kAbsent) {
    int32_t v = 0;
    std::memcpy(&v, p + l.int_at, sizeof(v));
    (l.peer ? args.peer : args.root) = v;
  }
  if (l.op_at != kAbsent) std::memcpy(&args.redop, p + l.op_at, sizeof(args.redop));
  *out = args;
  return NcclDecode::kDecoded;
}

}  // namespace ncclscope::plugin
