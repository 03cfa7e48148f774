#include "sim/emulator/nvtx_ranges.h"

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <mutex>

#include "sim/emulator/comm.h"
#include "sim/emulator/reduce_kernels.h"

namespace ncclsim {
namespace {

// NVTX's first static schema id; NCCL's call schemas are this + NVTX_SID_*, its reduction-op enum
// this + 20 (src/include/nvtx.h, NVTX_PAYLOAD_ENTRY_NCCL_REDOP).
constexpr uint64_t kStaticSchemaBase = uint64_t{1} << 24;
constexpr uint64_t kRedOpSchemaId = kStaticSchemaBase + 20;
constexpr int kMaxCall = 19;

// The payloads, one plain struct per call shape with the members NCCL's
// src/include/nvtx_payload_schemas.h declares, in its order and with its types.
struct CommBytes {  // AllGather, AlltoAll
  uint64_t comm;
  size_t bytes;
};
struct CommBytesInt {  // Broadcast, Gather, Scatter: root; Send, Recv: peer
  uint64_t comm;
  size_t bytes;
  int value;
};
struct CommBytesOp {  // AllReduce, ReduceScatter
  uint64_t comm;
  size_t bytes;
  ncclRedOp_t op;
};
struct CommBytesRootOp {  // Reduce
  uint64_t comm;
  size_t bytes;
  int root;
  ncclRedOp_t op;
};

// Entry names NCCL gives its schema entries (tools show them).
constexpr const char* kCommName = "NCCL communicator ID";
constexpr const char* kBytesName = "Message size [bytes]";
constexpr const char* kOpName = "Reduction operation";

nvtxPayloadSchemaEntry_t Entry(uint64_t type, const char* name, size_t offset) {
  nvtxPayloadSchemaEntry_t e{};
  e.type = type;
  e.name = name;
  e.offset = offset;
  return e;
}

// One call's schema and range name: registered once per process, at its first push.
struct CallInfo {
  const char* function = nullptr;  // NCCL's __func__ in the API function: the range's message
  nvtxPayloadSchemaEntry_t entries[5]{};  // the last one NCCL's zero terminator, not counted
  size_t num_entries = 0;
  size_t size = 0;
  std::once_flag once;
  nvtxStringHandle_t name = nullptr;
};

void Describe(NvtxCall call, CallInfo* c) {
  const uint64_t kRedOp = kRedOpSchemaId;
  c->entries[0] = Entry(NVTX_PAYLOAD_ENTRY_TYPE_UINT64, kCommName, 0);
  c->entries[1] = Entry(NVTX_PAYLOAD_ENTRY_TYPE_SIZE, kBytesName, offsetof(CommBytes, bytes));
  c->num_entries = 2;
  c->size = sizeof(CommBytes);
  auto add = [c](uint64_t type, const char* name, size_t offset, size_t size) {
    c->entries[c->num_entries++] = Entry(type, name, offset);
    c->size = size;
  };
  switch (call) {
    case NvtxCall::kAllGather:
      c->function = "ncclAllGather";
      break;
    case NvtxCall::kAlltoAll:
      c->function = "ncclAlltoAll";
      break;
    case NvtxCall::kAllReduce:
    case NvtxCall::kReduceScatter:
      c->function = call == NvtxCall::kAllReduce ? "ncclAllReduce" : "ncclReduceScatter";
      add(kRedOp, kOpName, offsetof(CommBytesOp, op), sizeof(CommBytesOp));
      break;
    case NvtxCall::kReduce:
      c->function = "ncclReduce";
      add(NVTX_PAYLOAD_ENTRY_TYPE_INT, "Root", offsetof(CommBytesRootOp, root),
          sizeof(CommBytesRootOp));
      add(kRedOp, kOpName, offsetof(CommBytesRootOp, op), sizeof(CommBytesRootOp));
      break;
    case NvtxCall::kBroadcast:
    case NvtxCall::kGather:
    case NvtxCall::kScatter:
      c->function = call == NvtxCall::kBroadcast ? "ncclBroadcast"
                    : call == NvtxCall::kGather  ? "ncclGather"
                                                 : "ncclScatter";
      add(NVTX_PAYLOAD_ENTRY_TYPE_INT, "Root", offsetof(CommBytesInt, value), sizeof(CommBytesInt));
      break;
    case NvtxCall::kSend:
    case NvtxCall::kRecv:
      c->function = call == NvtxCall::kSend ? "ncclSend" : "ncclRecv";
      add(NVTX_PAYLOAD_ENTRY_TYPE_INT, "Peer rank", offsetof(CommBytesInt, value),
          sizeof(CommBytesInt));
      break;
  }
}

// NCCL_NVTX_DISABLE, read once as NCCL's NCCL_PARAM(NvtxDisable, "NVTX_DISABLE", 0) reads it (a
// number in any base strtoll takes; anything else keeps the default, ranges on).
bool Disabled() {
  static const bool disabled = [] {
    const char* v = std::getenv("NCCL_NVTX_DISABLE");
    if (v == nullptr || *v == '\0') return false;
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(v, &end, 0);
    return errno == 0 && end != v && *end == '\0' && n != 0;
  }();
  return disabled;
}

nvtxDomainHandle_t Domain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("NCCL");
  return domain;
}

CallInfo& Info(NvtxCall call) {
  static CallInfo table[kMaxCall + 1];
  CallInfo& c = table[static_cast<int>(call)];
  std::call_once(c.once, [&c, call] {
    Describe(call, &c);
    // As NVTX3_FUNC_WITH_PARAMS: the schema (payload_schema's static) first, then the name.
    nvtxPayloadSchemaAttr_t attr{};
    attr.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
                     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
    attr.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
    attr.flags = NVTX_PAYLOAD_SCHEMA_FLAG_NONE;
    attr.entries = c.entries;
    attr.numEntries = c.num_entries;
    attr.payloadStaticSize = c.size;
    attr.schemaId = kStaticSchemaBase + static_cast<uint64_t>(call);
    nvtxPayloadSchemaRegister(Domain(), &attr);
    c.name = nvtxDomainRegisterStringA(Domain(), c.function);
  });
  return c;
}

// NCCL's bytes: count times ncclTypeSize, which is -1 for an unknown type (the product wraps).
size_t PayloadBytes(size_t count, ncclDataType_t dtype) {
  const size_t size = dtypeSize(static_cast<int>(dtype));
  return count * (size != 0 ? size : ~size_t{0});
}

template <typename T>
void Push(const CallInfo& c, NvtxCall call, const T& payload) {
  nvtxPayloadData_t data{kStaticSchemaBase + static_cast<uint64_t>(call), sizeof(T), &payload};
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.colorType = NVTX_COLOR_UNKNOWN;
  attr.payloadType = NVTX_PAYLOAD_TYPE_EXT;
  attr.reserved0 = 1;  // one nvtxPayloadData_t
  attr.payload.ullValue = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&data));
  attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attr.message.registered = c.name;
  nvtxDomainRangePushEx(Domain(), &attr);
}

}  // namespace

NvtxApiRange::NvtxApiRange(NvtxCall call, ncclComm_t comm, size_t count, ncclDataType_t dtype,
                           int root_or_peer, ncclRedOp_t op) noexcept {
  if (Disabled()) return;
  const CallInfo& c = Info(call);
  // As NCCL: the hash of whatever comm the caller passed (0 for none), before any check of it.
  const uint64_t hash = comm != nullptr ? comm->id_hash : 0;
  const size_t bytes = PayloadBytes(count, dtype);
  switch (call) {
    case NvtxCall::kAllGather:
    case NvtxCall::kAlltoAll:
      Push(c, call, CommBytes{hash, bytes});
      break;
    case NvtxCall::kAllReduce:
    case NvtxCall::kReduceScatter:
      Push(c, call, CommBytesOp{hash, bytes, op});
      break;
    case NvtxCall::kReduce:
      Push(c, call, CommBytesRootOp{hash, bytes, root_or_peer, op});
      break;
    case NvtxCall::kBroadcast:
    case NvtxCall::kGather:
    case NvtxCall::kScatter:
    case NvtxCall::kSend:
    case NvtxCall::kRecv:
      Push(c, call, CommBytesInt{hash, bytes, root_or_peer});
      break;
  }
  pushed_ = true;
}

NvtxApiRange::~NvtxApiRange() {
  if (pushed_) nvtxDomainRangePop(Domain());
}

void nvtxInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (Disabled()) return;
    // NCCL's src/init_nvtx.cc initNvtxRegisteredEnums: the built-in operators, by value.
    static const nvtxPayloadEnum_t kOps[] = {{"Sum", ncclSum, 0},
                                             {"Product", ncclProd, 0},
                                             {"Max", ncclMax, 0},
                                             {"Min", ncclMin, 0},
                                             {"Avg", ncclAvg, 0}};
    nvtxPayloadEnumAttr_t attr{};
    attr.fieldMask = NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES |
                     NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES | NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE |
                     NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID;
    attr.entries = kOps;
    attr.numEntries = sizeof(kOps) / sizeof(kOps[0]);
    attr.sizeOfEnum = sizeof(ncclRedOp_t);
    attr.schemaId = kRedOpSchemaId;
    nvtxPayloadEnumRegister(Domain(), &attr);
  });
}

}  // namespace ncclsim
