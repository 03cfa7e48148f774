// Fuzz target: what the NCCL payload decoder reads from memory another library lays out (an
// NCCL-domain range's attributes, the nvtxPayloadData_t they point to, the payload, a registered
// schema and its entries). Input, little-endian:
//   0  u8 flags (1: null data pointer, 2: null payload pointer, 4: raw payloadType)
//   2  u16 attributes' size      4 i32 payloadType        8 i32 reserved0
//   16 u64 data schemaId         24 u64 data size
//   32 schema: u64 fieldMask, type, numEntries, payloadStaticSize, schemaId
//   72 24 payload bytes          96 entries, 32 bytes each: flags, type, arrayOrUnionDetail, offset
// Every buffer is exactly as large as what it claims to hold (an oversized claim gets a 1-byte
// buffer), so ASan catches any read past a declared size. Checked: decoding and schema checks never
// crash; a decoded call is a known call whose root/peer/op fields fit it; an id whose registration
// differed is never decoded; the thread's current call is the decoded one, gone after its pop.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "plugin/nvtx/nvtx_nccl_payload.h"
#include "plugin/nvtx/nvtx_nccl_payload_calls.h"
#include "tests/plugin/nccl_nvtx_payloads.h"

namespace pl = ncclscope::plugin;
using ncclscope::trace::OpType;

namespace {

template <typename T>
T Read(const uint8_t* data, size_t size, size_t off) {
  T v{};
  if (off < size) std::memcpy(&v, data + off, off + sizeof(T) <= size ? sizeof(T) : size - off);
  return v;
}

// A buffer of exactly n bytes (1 when n is too large to be real), filled from src.
std::vector<uint8_t> Exact(uint64_t n, const uint8_t* src, size_t avail) {
  std::vector<uint8_t> b(n <= 4096 ? (n == 0 ? 1 : n) : 1, 0);
  std::memcpy(b.data(), src, avail < b.size() ? avail : b.size());
  return b;
}

bool Rooted(OpType op) {
  return op == OpType::kReduce || op == OpType::kBroadcast || op == OpType::kGather ||
         op == OpType::kScatter;
}
bool Reduction(OpType op) {
  return op == OpType::kAllReduce || op == OpType::kReduce || op == OpType::kReduceScatter;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto flags = Read<uint8_t>(data, size, 0);

  // The registered schema and its entries.
  nvtxPayloadSchemaAttr_t attr{};
  attr.fieldMask = Read<uint64_t>(data, size, 32);
  attr.type = Read<uint64_t>(data, size, 40);
  attr.numEntries = Read<uint64_t>(data, size, 48);
  attr.payloadStaticSize = Read<uint64_t>(data, size, 56);
  attr.schemaId = Read<uint64_t>(data, size, 64);
  std::vector<nvtxPayloadSchemaEntry_t> entries(
      attr.numEntries <= 16 ? (attr.numEntries == 0 ? 1 : attr.numEntries) : 1);
  for (size_t i = 0; i < entries.size(); ++i) {
    const size_t off = 96 + 32 * i;
    entries[i].flags = Read<uint64_t>(data, size, off);
    entries[i].type = Read<uint64_t>(data, size, off + 8);
    entries[i].arrayOrUnionDetail = Read<uint64_t>(data, size, off + 16);
    entries[i].offset = Read<uint64_t>(data, size, off + 24);
  }
  attr.entries = entries.data();
  uint32_t index = pl::kNcclSchemaCount;
  const pl::NcclSchemaCheck check = pl::CheckNcclSchema(&attr, &index);
  pl::NcclSchemaTable table;
  if (check != pl::NcclSchemaCheck::kNotACall) {
    if (index >= pl::kNcclSchemaCount) __builtin_trap();
    table.Note(index, check == pl::NcclSchemaCheck::kMatches);
  }

  // The range's attributes, its nvtxPayloadData_t and the payload.
  const uint64_t declared = Read<uint64_t>(data, size, 24);
  std::vector<uint8_t> payload =
      Exact(declared, size > 72 ? data + 72 : data, size > 72 ? size - 72 : 0);
  nvtxPayloadData_t pd{Read<uint64_t>(data, size, 16), static_cast<size_t>(declared),
                       (flags & 2) != 0 ? nullptr : payload.data()};
  // The attributes in a buffer of exactly their claimed size (at least the version and size
  // fields NVTX always has, at most the struct): the decoder reads no field past a->size.
  const auto attr_size = Read<uint16_t>(data, size, 2);
  nvtxEventAttributes_t full{};
  full.version = NVTX_VERSION;
  full.size = attr_size;
  full.payloadType = (flags & 4) != 0 ? Read<int32_t>(data, size, 4) : pl::nvtx_payload::kTypeExt;
  full.reserved0 = Read<int32_t>(data, size, 8);
  full.payload.ullValue =
      (flags & 1) != 0 ? 0 : static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&pd));
  size_t held = attr_size < sizeof(full) ? attr_size : sizeof(full);
  if (held < 4) held = 4;
  std::vector<uint8_t> attr_bytes(held);
  std::memcpy(attr_bytes.data(), &full, held);
  const auto* a = reinterpret_cast<const nvtxEventAttributes_t*>(attr_bytes.data());

  pl::NcclCallArgs args;
  const pl::NcclDecode d = pl::DecodeNcclPayload(a, table, &args);
  if (d == pl::NcclDecode::kDecoded) {
    const uint64_t id = pd.schemaId - pl::kNcclSchemaBase;
    if (id >= pl::kNcclSchemaCount ||
        table.Of(static_cast<uint32_t>(id)) == pl::NcclSchemaTable::kDiffers) {
      __builtin_trap();
    }
    if (args.op == OpType::kUnknown) __builtin_trap();
    const bool p2p = args.op == OpType::kSend || args.op == OpType::kRecv;
    if (!Rooted(args.op) && args.root != -1) __builtin_trap();
    if (!p2p && args.peer != -1) __builtin_trap();
    if (!Reduction(args.op) && args.redop != -1) __builtin_trap();
    if (pd.size != 16 && pd.size != 24) __builtin_trap();
  }

  // The thread's current call follows the push and the pop.
  pl::NcclRangePush(a);
  pl::NcclCallArgs cur;
  const bool has = pl::CurrentNcclCallArgs(&cur);
  const pl::NcclDecode d2 = pl::DecodeNcclPayload(a, pl::NcclSchemas(), &args);
  if (has != (d2 == pl::NcclDecode::kDecoded)) __builtin_trap();
  if (has && cur.op != args.op) __builtin_trap();
  pl::NcclRangePop();
  if (pl::CurrentNcclCallArgs(&cur)) __builtin_trap();
  return 0;
}

// Seeds: NCCL 2.28.9's AllReduce, Reduce and Send as it builds them, with their schemas.
extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  auto seed = [&](uint64_t sid, const void* payload, size_t n) {
    nccl_nvtx::Schema s;
    nccl_nvtx::MakeSchema(sid, &s);
    std::string b(96 + 32 * s.attr.numEntries, '\0');
    auto put = [&](size_t off, const void* v, size_t len) { std::memcpy(&b[off], v, len); };
    const uint16_t attr_size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    const int32_t one = 1;
    const uint64_t id = nccl_nvtx::kBase + sid, size = n;
    put(2, &attr_size, 2);
    put(8, &one, 4);
    put(16, &id, 8);
    put(24, &size, 8);
    put(32, &s.attr.fieldMask, 8);
    put(40, &s.attr.type, 8);
    put(48, &s.attr.numEntries, 8);
    put(56, &s.attr.payloadStaticSize, 8);
    put(64, &s.attr.schemaId, 8);
    put(72, payload, n);
    for (size_t i = 0; i < s.attr.numEntries; ++i) {
      put(96 + 32 * i + 8, &s.entries[i].type, 8);
      put(96 + 32 * i + 24, &s.entries[i].offset, 8);
    }
    seeds->push_back(b);
  };
  const nccl_nvtx::CommBytesOp all_reduce{0xfeed, 4096, 2};
  const nccl_nvtx::CommBytesRootOp reduce{0xfeed, 64, 3, 4};
  const nccl_nvtx::CommBytesInt send{0xfeed, 8, 1};
  const nccl_nvtx::CommBytes all_gather{0xfeed, 16};
  seed(nccl_nvtx::kAllReduce, &all_reduce, sizeof(all_reduce));
  seed(nccl_nvtx::kReduce, &reduce, sizeof(reduce));
  seed(nccl_nvtx::kSend, &send, sizeof(send));
  seed(nccl_nvtx::kAllGather, &all_gather, sizeof(all_gather));
}
