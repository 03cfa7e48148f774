// The record: one NCCL call of one rank, fixed size, as stored in the ring file.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ncclscope::trace {

// What a record describes. Values are stored in files: append only, never renumber.
enum class OpType : uint16_t {
  kUnknown = 0,
  // Collectives: carry the per-communicator collective sequence number.
  kAllReduce = 1,
  kBroadcast = 2,  // ncclBroadcast and the legacy in-place ncclBcast
  kReduce = 3,
  kAllGather = 4,
  kReduceScatter = 5,
  kAlltoAll = 6,
  kGather = 7,
  kScatter = 8,
  // Point to point: carry the per-(communicator, peer) sequence number.
  kSend = 20,
  kRecv = 21,
  // Groups.
  kGroupStart = 30,
  kGroupEnd = 31,
  kGroupSimulateEnd = 32,
  // Communicator lifecycle.
  kGetUniqueId = 40,
  kCommInitRank = 41,
  kCommInitRankConfig = 42,
  kCommInitAll = 43,
  kCommInitRankScalable = 44,
  kCommSplit = 45,
  kCommShrink = 46,
  kCommFinalize = 47,
  kCommDestroy = 48,
  kCommAbort = 49,
  kCommRevoke = 50,
  // Memory and registration.
  kCommRegister = 60,
  kCommDeregister = 61,
  kCommWindowRegister = 62,
  kCommWindowDeregister = 63,
  kMemAlloc = 64,
  kMemFree = 65,
  kRedOpCreatePreMulSum = 66,
  kRedOpDestroy = 67,
  // Errors reported asynchronously (recorded only when not ncclSuccess/ncclInProgress).
  kCommGetAsyncError = 80,
  // Written by the profiler-plugin side of the probe (NCCL_PROFILER_PLUGIN), not by a call.
  kProfilerAttach = 90,  // the profiler observes this communicator's device work from now on
  kDeviceStart = 91,     // the device work of a collective started (first kernel channel)
};

// Stable lower-case name ("allreduce", "send", ...); "unknown" for values this build does not know.
const char* OpTypeName(OpType op);
bool IsCollective(OpType op);
bool IsP2P(OpType op);

// Record flags.
inline constexpr uint32_t kFlagInGroup = 1u << 0;  // issued between GroupStart and GroupEnd
inline constexpr uint32_t kFlagInPlace = 1u << 1;  // sendbuff == recvbuff
inline constexpr uint32_t kFlagCompletionTracked = 1u << 2;  // a device event was recorded

// RecordData::result of a record opened at entry to a call that has not returned yet (t_exit_ns 0).
// Calls that may block (communicator creation, split, finalize, destroy, group end) are recorded
// at entry, so a rank stuck inside one shows where it is.
inline constexpr int32_t kResultInCall = -1;

// Sentinels for RecordData::t_device_done_ns.
inline constexpr int64_t kDoneUntracked =
    INT64_MIN;  // no device completion tracking for this record
// A pending record holds -(slot index + 1), so a late completion can never land on a newer record.
inline constexpr int64_t PendingMarker(uint64_t slot_index) {
  return -static_cast<int64_t>(slot_index) - 1;
}
inline constexpr bool IsPending(int64_t t_device_done_ns) {
  return t_device_done_ns < 0 && t_device_done_ns != kDoneUntracked;
}

// Per-op meaning of the fields that are not self-explanatory:
//   collectives   seq = per-comm sequence (0 when NCCL rejected the call), peer = root or -1
//   send / recv   seq = per-(comm, peer, direction) sequence, peer = comm rank of the peer
//   comm_init_*   comm_id = the new communicator, aux = rank << 32 | nranks
//   comm_init_all comm_id = the new communicators' id, aux = ndev
//   comm_split    comm_id = the parent, seq = split index among the parent's splits/shrinks,
//                 aux = (uint32 color) << 32 | (uint32 key); the child's id is
//                 CommIdFromSplit(parent, seq, color)
//   comm_shrink   comm_id = the parent, seq = index as for split, aux = exclude count << 32 | flags
//   get_unique_id comm_id = the id of the communicators that will be created from this unique id
//   mem_alloc/free, comm_register, window_register: count = bytes, aux = the pointer
//   comm_get_async_error: aux = the asynchronous error (recorded when it changes to an error)
//   profiler_attach  comm_id = the communicator, aux = NCCL's commHash, count = the profiler ABI
//                version (4, 5, 6), peer = comm rank; seq 0
//   device_start comm_id, seq = the collective's per-comm sequence number (0: the probe could not
//                tell which collective it was, so absences on this communicator prove nothing),
//                count = NCCL's per-(comm, function) seqNumber, aux = GPU start time (globaltimer
//                ns, 0 unknown), peer = channel; t_enter_ns = t_exit_ns = when the host saw it
//
// The payload of one record. Times are CLOCK_MONOTONIC nanoseconds of the writing host; the file
// header holds a (realtime, monotonic) pair taken together to convert them.
struct RecordData {
  uint64_t comm_id;      // communicator identity, equal on every member rank; 0 when none
  uint64_t seq;          // collective: per-comm sequence (1-based); p2p: per-(comm, peer) sequence
  uint64_t group_id;     // process-wide id of the enclosing outermost group; 0 outside groups
  uint64_t count;        // element count as passed (sendcount for AllGather); bytes for MemAlloc
  uint64_t stream;       // cudaStream_t as an integer
  uint64_t aux;          // op specific: split color/key packed, rank count of InitAll, ...
  uint64_t send_buffer;  // device addresses as integers (0 when not applicable), for in-place,
  uint64_t recv_buffer;  // overlap and registration questions
  int64_t t_enter_ns;    // host time the call entered ncclscope
  int64_t t_exit_ns;     // host time the call returned to the caller
  int64_t t_device_done_ns;  // device completion as observed by the host; see sentinels above
  uint32_t op;               // OpType
  int32_t dtype;             // ncclDataType_t, -1 when not applicable
  int32_t redop;             // ncclRedOp_t, -1 when not applicable
  int32_t peer;              // root for rooted collectives, peer for send/recv, -1 otherwise
  int32_t result;            // ncclResult_t returned to the caller
  uint32_t flags;            // kFlag*
  uint32_t tid;              // Linux thread id of the caller
  uint32_t reserved;
};
static_assert(sizeof(RecordData) == size_t{15} * 8, "RecordData is 15 words");

}  // namespace ncclscope::trace
