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
  kP2pDeviceStart = 92,  // the device work of a send or receive started (first kernel channel)
  kProxyProgress = 93,   // where one (operation, channel, peer, side) of NCCL's proxy stands
  kKernelChannels = 94,  // which kernel channels of an unfinished operation started and stopped
  kProfilerMask = 95,    // the profiler's activation mask changed (proxy detail on or off)
  // Written by the CUPTI probe (NCCLSCOPE_CUPTI=1) from kernel activity records, not by a call.
  kDeviceCompute = 98,       // GPU time in compute kernels before one NCCL kernel (device timeline)
  kDeviceActivityLoss = 99,  // kernel activity lost: compute sums across it are unknown
  // Written by the NVTX injection side of the probe: the names of an NVTX context id (below).
  kNvtxPhaseName = 96,  // the phase of context `seq`: the range right above the step
  kNvtxRangeName = 97,  // the innermost range of context `seq`
  // Written by NCCLSCOPE_ACCEL's routing: one of ncclscope's own kernels gave up waiting for a peer
  // (collective `seq`; peer: the rank waited for, dtype: block, redop: barrier 0 start 1 middle
  // 2 end, count: the call's epoch, aux: what the peer's flag held).
  kAccelStall = 100,
  // Written by NCCLSCOPE_NUMERICS when a sampled collective completed: what its NaN/Inf scan of
  // the input and its hash of the output found (trace/numerics_record.h).
  kNumerics = 101,
  // Never written by the probe: made by reading a PyTorch Flight Recorder dump taken with
  // TORCH_NCCL_ENABLE_TIMING, the device time torch's CUDA events measured around one operation.
  kEventDuration = 102,
};

// Stable lower-case name ("allreduce", "send", ...); "unknown" for values this build does not know.
const char* OpTypeName(OpType op);
bool IsCollective(OpType op);
bool IsP2P(OpType op);
// Written by the probe about operations, communicators or itself (profiler, CUPTI, NVTX names,
// ncclscope's own kernels), or made up about an operation by a reader of another tool's trace
// (event_duration), not for a call the application made.
bool IsProbeWritten(OpType op);

// Record flags.
inline constexpr uint32_t kFlagInGroup = 1u << 0;  // issued between GroupStart and GroupEnd
inline constexpr uint32_t kFlagInPlace = 1u << 1;  // sendbuff == recvbuff
inline constexpr uint32_t kFlagCompletionTracked = 1u << 2;  // a device event was recorded
inline constexpr uint32_t kFlagAccelerated = 1u << 3;  // run by ncclscope's own kernels, not NCCL
// A comm_abort record the watchdog wrote: it aborted the communicator on a confirmed hang
// (NCCLSCOPE_ON_HANG=abort). The work of that communicator still pending then was abandoned, not
// completed, whatever completion the device reports afterwards.
inline constexpr uint32_t kFlagByWatchdog = 1u << 4;

// proxy_progress `stream` bits.
inline constexpr uint64_t kProxySend = 1u << 0;   // the send side (else the receive side)
inline constexpr uint64_t kProxyEnded = 1u << 1;  // the proxy operation's work ended
// profiler_mask `count`.
inline constexpr uint64_t kMaskWhyStart = 0;     // the mask asked for at attach (configuration)
inline constexpr uint64_t kMaskWhySuspect = 1;   // proxy detail on: the watchdog suspects a hang
inline constexpr uint64_t kMaskWhyResolved = 2;  // proxy detail off again: the suspect resolved

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
//   device_compute one NCCL kernel as CUPTI saw it on the GPU. comm_id, seq = the collective that
//                launched it (both 0 for a kernel launched by ncclGroupEnd: then group_id names
//                the group, whose collectives carry the same group_id), group_id as the launching
//                record's; count = compute ns: the union of non-NCCL kernel time on this device
//                after the previous NCCL kernel ended and before this one started; peer = how
//                many compute kernels ran there; aux = this kernel's GPU start, send_buffer its
//                GPU end, recv_buffer the previous NCCL kernel's GPU end (CUPTI timestamps, ns; 0:
//                none seen since the probe started or since activity was lost, so count is
//                unknown, not zero); dtype = CUPTI device id; stream = CUPTI stream id;
//                redop = the OpType of the launching record (a collective, send/recv, group_end);
//                t_enter_ns = t_exit_ns = when the probe wrote it. A kernel that never ends (a
//                hung collective, a hung compute kernel) produces no activity record, hence no
//                device_compute: a missing record means "unknown", never "no compute".
//   device_activity_loss count = activity records CUPTI dropped (buffers full) or kernels the
//                probe could not attribute, aux = 1 dropped by CUPTI, 2 correlation unknown;
//                the next device_compute of each device has recv_buffer 0
//   p2p_device_start  comm_id, seq = the send's or receive's per-(comm, peer, direction)
//                sequence number (0: unknown, as for device_start), peer = the peer's comm rank,
//                redop = the operation (OpType kSend or kRecv), dtype = kernel channel, aux = GPU
//                start time (globaltimer ns), count = 0
//   proxy_progress  one NCCL proxy operation (network transfers of one channel to or from one
//                peer) of the operation comm_id/seq, written by the background thread while it is
//                in flight and once more when it ended (only for one it had written before).
//                peer = the proxy's peer (comm rank), dtype = channel, redop = the NCCL profiler
//                state of the oldest step not done (0 none yet; 8 SendGPUWait, 20 SendPeerWait,
//                9 SendWait, 10 RecvWait, 11 RecvFlushWait, 12 RecvGPUWait), group_id = host time
//                that state was entered (this ring's clock), count = steps posted << 32 | steps
//                done, aux = steps sent (send: handed to the network; receive: receive posted to
//                the network) << 32 | steps received (receive: data arrived; send: 0),
//                stream = kProxy* bits | steps in all (24 bits, saturated) << 8 | the operation's
//                OpType << 32 (kSend, kRecv or a collective, whose number seq is); t_exit_ns =
//                t_enter_ns = when written; fields the detectors read are all kept by RankFile
//   kernel_channels  an operation (comm_id, seq, stream = its OpType << 32, peer = the send's or
//                receive's peer or -1) whose kernel started on some channel and has not stopped on
//                all of them, written by the background thread when that changes:
//                aux = mask of channels started, count = mask of channels stopped (bit c =
//                channel c; NCCL has at most 64), t_device_done_ns untracked
//   event_duration  one operation's device time as torch measured it between the CUDA events it
//                records around the operation on its stream (a Flight Recorder entry's duration_ms;
//                never in a ring file ncclscope wrote): aux = the writer index of the operation's
//                record, count = the time in ns, comm_id, seq and peer the operation's, redop its
//                OpType; t_enter_ns = t_exit_ns = the operation's completion, t_device_done_ns
//                untracked
//   profiler_mask  aux = the activation mask the probe now asks NCCL for, count = why
//                (kMaskWhy* below); comm_id 0
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
  uint32_t reserved;         // NVTX context of the calling thread (below); 0 when none
};
static_assert(sizeof(RecordData) == size_t{15} * 8, "RecordData is 15 words");

// NVTX context (RecordData::reserved), set on every record the interposer writes while NVTX is
// injected (NVTX_INJECTION64_PATH=libncclscope.so) and the calling thread is inside a range:
//   bits 8..31  step + 1 of the innermost step range the thread is inside (a range named like
//               "step 123", NCCLSCOPE_NVTX_STEP_PATTERN), or of an nvtxRangeStart step range
//               when the thread is inside none; 0 no step; steps past 16777213 read as 16777213
//   bits 0..7   context id: 0 none, 1..254 an interned (phase, innermost range) pair, 255 the
//               process had more than 254 pairs (names unknown)
// The phase is the range right above the step range (forward, backward, optimizer, ...), the
// innermost range the thread's innermost one; either is "" when there is none (no step: no phase;
// the innermost range is the step range: none). NCCL's own "NCCL" domain ranges are never
// counted. The names of context N are in the nvtx_phase_name and nvtx_range_name records with
// seq N, written before its first use, and again once the ring moved on by half its capacity:
//   nvtx_phase_name / nvtx_range_name  seq = context id, the name NUL-padded in the 48 bytes from
//                group_id to recv_buffer (names are cut at 47 bytes), tid = the writer's thread
inline constexpr uint32_t kNvtxContextFull = 255;
inline constexpr size_t kNvtxNameBytes = 48;
inline constexpr uint64_t kNvtxStepMax = 0xFFFFFEu - 1;  // largest step stored exactly
inline constexpr uint32_t NvtxStepField(uint64_t step) {
  return static_cast<uint32_t>((step < kNvtxStepMax ? step : kNvtxStepMax) + 1);
}
inline constexpr uint32_t NvtxReservedWord(uint64_t step_field, uint32_t context) {
  return static_cast<uint32_t>(step_field << 8) | (context & 0xFFu);
}
inline constexpr bool NvtxHasStep(uint32_t reserved) {
  return (reserved >> 8) != 0;
}
inline constexpr uint64_t NvtxStep(uint32_t reserved) {
  return (reserved >> 8) - 1;
}
inline constexpr uint32_t NvtxContextId(uint32_t reserved) {
  return reserved & 0xFFu;
}

}  // namespace ncclscope::trace
