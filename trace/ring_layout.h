// The ring file's on-disk layout: header, communicator table, record slots. Shared by writer and
// readers in other processes, so every field that changes after creation is a lock-free atomic.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "trace/record.h"

namespace ncclscope::trace {

inline constexpr char kRingMagic[8] = {'N', 'C', 'S', 'C', 'O', 'P', 'E', 'R'};
inline constexpr uint32_t kRingFormatVersion = 1;
inline constexpr size_t kHeaderBytes = 4096;
inline constexpr size_t kHostBytes = 64;
inline constexpr size_t kJobIdBytes = 64;
inline constexpr size_t kCommNameBytes = 64;
inline constexpr size_t kGpuUuidBytes = 48;  // "GPU-" + 36 characters + NUL, with room to spare

// Header flags.
inline constexpr uint32_t kHeaderSuspect = 1u << 0;   // the local watchdog suspects a stall
inline constexpr uint32_t kHeaderFinished = 1u << 1;  // the process exited normally
// The watchdog aborted a communicator of this process on a confirmed hang
// (NCCLSCOPE_ON_HANG=abort): what the process does from then on (its waits ending, its exit) is the
// abort's doing, not the job's. Each such communicator also has a comm_abort record with
// kFlagByWatchdog.
inline constexpr uint32_t kHeaderWatchdogAborted = 1u << 2;
// A presence file: written when the process started, because its launcher named its rank, and
// before any NCCL call. It holds no communicator and no record, and its heartbeat never beats: its
// writer is judged by its process alone. The process's ring file replaces it at its first NCCL
// call; one left in the directory says the rank was started and never called NCCL (or exited, with
// kHeaderFinished, before it did).
inline constexpr uint32_t kHeaderPresence = 1u << 3;

// One slot: a commit word (seqlock) and the payload as relaxed atomic words, so a reader in another
// process can copy a slot while it is being written and detect the tear instead of racing on it.
struct RecordSlot {
  std::atomic<uint64_t> commit;  // slot index + 1 once complete; kSlotWriting | (index + 1) while
                                 // a writer owns it; 0 before the first write
  std::atomic<uint64_t> words[15];
};
// Set in the commit word while one writer owns the slot. Writers claim a slot with a CAS, so a
// writer that lapped the ring never mixes its words into those of a preempted older writer.
inline constexpr uint64_t kSlotWriting = uint64_t{1} << 63;
static_assert(sizeof(RecordSlot) == 128);
inline constexpr size_t kDeviceDoneWord = offsetof(RecordData, t_device_done_ns) / 8;

// CommEntry::state. An entry goes Empty -> Writing -> Valid, or, when it is published at the
// entry of a creation call (so a rank blocked inside the call shows which communicator and name
// it waits for), Empty -> Writing -> Pending and then, once, Pending -> Updating -> Valid (the call
// returned: rank, size, device and handle rewritten in place) or Pending -> Withdrawn (the call
// failed). Readers of format version 1 that predate Pending see only Valid entries, as before.
inline constexpr uint32_t kCommEntryEmpty = 0;
inline constexpr uint32_t kCommEntryWriting = 1;
inline constexpr uint32_t kCommEntryValid = 2;
inline constexpr uint32_t kCommEntryPending = 3;
inline constexpr uint32_t kCommEntryUpdating = 4;
inline constexpr uint32_t kCommEntryWithdrawn = 5;
// No table entry (the table was full when one was asked for).
inline constexpr uint32_t kNoCommEntry = UINT32_MAX;

// How a communicator was created (CommEntry::origin).
inline constexpr uint32_t kCommFromUniqueId = 1;
inline constexpr uint32_t kCommFromSplit = 2;
inline constexpr uint32_t kCommFromShrink = 3;
inline constexpr uint32_t kCommFromInitAll = 4;

struct CommEntry {
  std::atomic<uint32_t> state;  // kCommEntry*
  uint32_t origin;              // kCommFrom*
  uint64_t id;
  uint64_t parent_id;  // 0 unless split or shrunk
  int32_t rank;
  int32_t nranks;
  int32_t color;         // split color, -1 otherwise
  int32_t key;           // split key, -1 otherwise
  uint32_t split_index;  // n-th split/shrink of the parent on this rank (1-based)
  int32_t cuda_device;   // -1 when unknown
  int64_t created_monotonic_ns;
  uint64_t handle;            // ncclComm_t as an integer, to tell two live instances apart
  char name[kCommNameBytes];  // ncclConfig_t.commName when given, else derived ("world", ...)
};
static_assert(sizeof(CommEntry) == 128);

// The fields of a pending entry that its one rewrite changes (rank, nranks, cuda_device,
// created_monotonic_ns, handle) are stored and loaded whole, as relaxed atomics on the plain
// fields, so a reader racing the rewrite copies each whole; the state word tells it whether the
// copy is consistent. The other fields never change once an entry is published.
template <typename T>
inline T LoadCommField(const T& field) {
  return __atomic_load_n(&field, __ATOMIC_RELAXED);
}
template <typename T>
inline void StoreCommField(T& field, T value) {
  __atomic_store_n(&field, value, __ATOMIC_RELAXED);
}

struct FileHeader {
  char magic[8];
  uint32_t format_version;
  uint32_t header_bytes;
  uint32_t record_bytes;
  uint32_t comm_capacity;
  uint64_t record_capacity;  // power of two
  uint64_t comm_table_offset;
  uint64_t records_offset;
  uint64_t file_bytes;
  int32_t pid;
  int32_t local_rank;  // -1 when unknown
  char host[kHostBytes];
  char job_id[kJobIdBytes];
  int64_t start_realtime_ns;
  int64_t start_monotonic_ns;
  uint32_t nccl_version;  // NCCL_VERSION_CODE of the library found, 0 when unknown
  // The run of the job under torchrun: TORCHELASTIC_RESTART_COUNT at creation, 0 when unset (and in
  // files of older builds, which held zero here).
  uint32_t restart;
  std::atomic<int64_t> heartbeat_monotonic_ns;
  std::atomic<uint64_t> write_pos;  // slots claimed so far; overwritten = write_pos - capacity
  std::atomic<uint64_t> dropped_records;        // calls that could not be recorded
  std::atomic<uint64_t> dropped_comms;          // communicators beyond the table's capacity
  std::atomic<uint64_t> untracked_completions;  // device completions that could not be tracked
  std::atomic<uint64_t> unknown_comm_records;   // calls on communicators created before we loaded
  std::atomic<uint32_t> comm_count;             // comm table entries claimed
  std::atomic<uint32_t> flags;                  // kHeader*
  // Global rank and world size: from the environment at creation, else learnt from the first
  // communicator that spans the job; -1 until known.
  std::atomic<int32_t> global_rank;
  std::atomic<int32_t> world_size;
  // The GPU of the first communicator, "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" as nvidia-smi and
  // dcgm-exporter print it. Set once: the characters first, then gpu_uuid_len (release), so a
  // reader never sees half a UUID. Files of older builds hold zeros here, which reads as "none".
  std::atomic<uint32_t> gpu_uuid_len;  // 0: not known (yet); kGpuUuidBytes or more: being written
  char gpu_uuid[kGpuUuidBytes];
  // NCCLSCOPE_NUMERICS: sampled collectives whose passes could not run or report (no free result
  // slot, a stream being captured into a CUDA graph, a driver error, a group of too many). Files
  // of older builds hold zeros here.
  std::atomic<uint64_t> numerics_skipped;
};
static_assert(sizeof(FileHeader) <= kHeaderBytes);
static_assert(std::atomic<uint64_t>::is_always_lock_free &&
              std::atomic<int64_t>::is_always_lock_free);

}  // namespace ncclscope::trace
