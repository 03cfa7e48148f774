// The arguments NCCL 2.28.9 attaches to its own NVTX ranges (the "NCCL" domain): each collective
// and point-to-point call pushes one range whose extended payload (NVTX_PAYLOAD_TYPE_EXT, one
// nvtxPayloadData_t) holds its communicator's commHash, its size in bytes and its root, peer or
// reduction op, under a static schema id per call type. Reading them gives statically linked NCCL
// (no interposer) what its profiler events lack: the reduction op. docs/nvtx.md lists the layouts
// and what is refused.
//
// The layout is another library's, fixed per NCCL version and not announced in the range itself:
// a payload is read only when its schema id is one of 2.28.9's call schemas, its size is exactly
// 2.28.9's, and, when NCCL's schema registration reached the injection (the payload extension,
// nvtx_nccl_payload_ext.cpp), that registration matched 2.28.9's entries too. Anything else is
// refused, never guessed at.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "trace/record.h"

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

namespace ncclscope::plugin {

// One NCCL API call as its range's payload gives it.
struct NcclCallArgs {
  trace::OpType op = trace::OpType::kUnknown;  // a collective, kSend or kRecv
  uint64_t comm_hash = 0;  // NCCL's comm->commHash (0: the call was given a null communicator)
  uint64_t bytes = 0;  // count × type size (AllGather: sendcount's; ReduceScatter: recvcount's)
  int32_t root = -1;   // Reduce, Broadcast, Gather, Scatter; -1 for the others
  int32_t peer = -1;   // Send, Recv; -1 for the others
  int32_t redop = -1;  // ncclRedOp_t of AllReduce, Reduce, ReduceScatter; -1 for the others
};

// NCCL's static schema ids: (1 << 24) + N, N from 0 (CommInitRank) to 19 (CommRevoke)
// (src/include/nvtx.h, NVTX_SID_*).
inline constexpr uint64_t kNcclSchemaBase = uint64_t{1} << 24;
inline constexpr uint32_t kNcclSchemaCount = 20;

// The payload extension's values NCCL 2.28.9 is built with (its bundled nvToolsExtPayload.h,
// compat id 0x0103). The toolkit's header (0x0104) renamed some of them; values and struct layouts
// are the same (static_asserts in the .cpp).
namespace nvtx_payload {
inline constexpr int32_t kTypeExt = static_cast<int32_t>(0xDFBD0009u);  // NVTX_PAYLOAD_TYPE_EXT
inline constexpr uint64_t kEntryInt = 5;                                // ..._ENTRY_TYPE_INT
inline constexpr uint64_t kEntryUint64 = 18;                            // ..._ENTRY_TYPE_UINT64
inline constexpr uint64_t kEntrySize = 22;                              // ..._ENTRY_TYPE_SIZE
inline constexpr uint64_t kSchemaTypeStatic = 1;  // NVTX_PAYLOAD_SCHEMA_TYPE_STATIC
inline constexpr uint64_t kAttrType = 1u << 2;    // NVTX_PAYLOAD_SCHEMA_ATTR_TYPE
inline constexpr uint64_t kAttrEntries = 1u << 4;
inline constexpr uint64_t kAttrNumEntries = 1u << 5;
inline constexpr uint64_t kAttrStaticSize = 1u << 6;
inline constexpr uint64_t kAttrSchemaId = 1u << 8;
}  // namespace nvtx_payload

// What NCCL's schema registrations have said about each static id so far. Written when a schema
// is registered (cold), read on the push path (lock-free).
class NcclSchemaTable {
 public:
  enum State : uint8_t { kUnseen = 0, kMatches = 1, kDiffers = 2 };
  // Records a registration's verdict for id index; a difference is final (another NCCL in the
  // process, or a second registration that disagrees, keeps the id refused). Thread-safe.
  void Note(uint32_t index, bool matches) noexcept;
  State Of(uint32_t index) const noexcept;

 private:
  std::atomic<uint8_t> state_[kNcclSchemaCount] = {};
};
// The process's table (the payload extension's registrations land here).
NcclSchemaTable& NcclSchemas() noexcept;

enum class NcclSchemaCheck : uint8_t {
  kNotACall,  // not one of NCCL's static call schema ids (creation calls, anything else)
  kMatches,   // 2.28.9's layout for that call
  kDiffers,   // NCCL's id, another layout: its payloads are refused
};
// Compares a schema registered in the NCCL domain with what NCCL 2.28.9 registers under the same
// id (src/include/nvtx_payload_schemas.h, nvtx.h payload_schema): static type, entry count, each
// entry's type and offset, static size. Reads at most 8 entries. Sets *index for a call schema.
// Cold path; attr may be anything a caller hands NVTX (null, no entries, a huge count).
NcclSchemaCheck CheckNcclSchema(const nvtxPayloadSchemaAttr_t* attr, uint32_t* index) noexcept;

enum class NcclDecode : uint8_t {
  kNoPayload,  // no extended payload (ncclGroupStart/End, ncclCommInitRank at push, ...)
  kNotACall,   // an NCCL schema of a call this decoder does not read (ncclCommDestroy)
  kDecoded,    // *out holds the call
  kRefused,    // an extended payload not laid out as 2.28.9's: unknown id, size or count, a
               // registration that differed, a null pointer
};
// Reads the call in a range's attributes, as NCCL 2.28.9 builds them (src/include/nvtx.h,
// NVTX3_FUNC_WITH_PARAMS; nvtx3.hpp event_attributes(nvtxPayloadData_t const*)). Reads only the
// attributes, the one nvtxPayloadData_t they point to and, once it is accepted, exactly its
// declared size. Hot path: no lock, no allocation, no system call.
NcclDecode DecodeNcclPayload(const nvtxEventAttributes_t* a, const NcclSchemaTable& schemas,
                             NcclCallArgs* out) noexcept;

}  // namespace ncclscope::plugin
