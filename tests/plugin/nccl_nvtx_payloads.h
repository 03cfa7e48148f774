// NCCL 2.28.9's NVTX ranges rebuilt for tests: the payload structs, their schemas and the event
// attributes, laid out the way NCCL's headers make them (src/include/nvtx_payload_schemas.h: one
// plain struct per call, the schema entries' type and offsetof each member; src/include/nvtx.h:
// NVTX3_FUNC_WITH_PARAMS registers the schema once with payload_schema (static type, entries,
// count without the terminator, sizeof the struct, schema id (1 << 24) + NVTX_SID_*) and pushes
// attributes whose message is the registered function name and whose payload is one
// nvtxPayloadData_t; NCCL's nvtx3.hpp, event_attributes(nvtxPayloadData_t const*): payloadType
// NVTX_PAYLOAD_TYPE_EXT, reserved0 1, payload.ullValue the array's address).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "plugin/nvtx/nvtx_nccl_payload.h"

namespace nccl_nvtx {

namespace np = ncclscope::plugin::nvtx_payload;

constexpr uint64_t kBase = uint64_t{1} << 24;
// NVTX_SID_* (src/include/nvtx.h).
enum Sid : uint64_t {
  kCommInitRank = 0,
  kCommDestroy = 2,
  kAllGather = 4,
  kAllReduce = 5,
  kBroadcast = 6,
  kReduceScatter = 7,
  kReduce = 8,
  kSend = 9,
  kRecv = 10,
  kAlltoAll = 16,
  kGather = 17,
  kScatter = 18,
};
constexpr uint64_t kRedOpType = kBase + 20;  // NVTX_PAYLOAD_ENTRY_NCCL_REDOP

// The structs (member order and types as NCCL declares them).
struct CommBytes {  // AllGather, AlltoAll
  uint64_t comm;
  size_t bytes;
};
struct CommBytesInt {  // Broadcast, Gather, Scatter (root); Send, Recv (peer)
  uint64_t comm;
  size_t bytes;
  int value;
};
struct CommBytesOp {  // AllReduce, ReduceScatter
  uint64_t comm;
  size_t bytes;
  int op;  // ncclRedOp_t
};
struct CommBytesRootOp {  // Reduce
  uint64_t comm;
  size_t bytes;
  int root;
  int op;
};
struct CommInitRank {  // CommInitRank and the calls sharing its schema (CommDestroy, ...)
  uint64_t newcomm;
  int nranks;
  int myrank;
  int cudaDev;
};

// The schema entries NCCL registers for a call id, and the attributes pointing to them.
struct Schema {
  std::vector<nvtxPayloadSchemaEntry_t> entries;
  nvtxPayloadSchemaAttr_t attr{};
};
inline nvtxPayloadSchemaEntry_t Entry(uint64_t type, uint64_t offset) {
  nvtxPayloadSchemaEntry_t e{};
  e.type = type;
  e.offset = offset;
  return e;
}
inline void MakeSchema(uint64_t sid, Schema* s) {
  auto& e = s->entries;
  e.clear();
  size_t size = 0;
  auto comm_bytes = [&] {
    e.push_back(Entry(np::kEntryUint64, 0));
    e.push_back(Entry(np::kEntrySize, 8));
  };
  switch (sid) {
    case kAllGather:
    case kAlltoAll:
      comm_bytes();
      size = sizeof(CommBytes);
      break;
    case kBroadcast:
    case kGather:
    case kScatter:
    case kSend:
    case kRecv:
      comm_bytes();
      e.push_back(Entry(np::kEntryInt, offsetof(CommBytesInt, value)));
      size = sizeof(CommBytesInt);
      break;
    case kAllReduce:
    case kReduceScatter:
      comm_bytes();
      e.push_back(Entry(kRedOpType, offsetof(CommBytesOp, op)));
      size = sizeof(CommBytesOp);
      break;
    case kReduce:
      comm_bytes();
      e.push_back(Entry(np::kEntryInt, offsetof(CommBytesRootOp, root)));
      e.push_back(Entry(kRedOpType, offsetof(CommBytesRootOp, op)));
      size = sizeof(CommBytesRootOp);
      break;
    default:  // CommInitRank's
      e.push_back(Entry(np::kEntryUint64, 0));
      e.push_back(Entry(np::kEntryInt, offsetof(CommInitRank, nranks)));
      e.push_back(Entry(np::kEntryInt, offsetof(CommInitRank, myrank)));
      e.push_back(Entry(np::kEntryInt, offsetof(CommInitRank, cudaDev)));
      size = sizeof(CommInitRank);
      break;
  }
  e.push_back(Entry(0, 0));  // NCCL's terminator {0, 0}, not counted
  s->attr = {};
  s->attr.fieldMask = np::kAttrType | np::kAttrEntries | np::kAttrNumEntries | np::kAttrStaticSize |
                      np::kAttrSchemaId;
  s->attr.type = np::kSchemaTypeStatic;
  s->attr.entries = e.data();
  s->attr.numEntries = e.size() - 1;
  s->attr.payloadStaticSize = size;
  s->attr.schemaId = kBase + sid;
}

// One push's attributes and the data they point to (not copyable: they point into themselves).
template <typename T>
struct Push {
  T payload;
  nvtxPayloadData_t data[1];
  nvtxEventAttributes_t attr{};

  Push(uint64_t sid, const T& p, nvtxStringHandle_t name = nullptr) : payload(p) {
    data[0] = {kBase + sid, sizeof(T), &payload};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attr.message.registered = name;
    attr.payloadType = np::kTypeExt;
    attr.reserved0 = 1;
    attr.payload.ullValue = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(data));
  }
  Push(const Push&) = delete;
  Push& operator=(const Push&) = delete;
};

}  // namespace nccl_nvtx
