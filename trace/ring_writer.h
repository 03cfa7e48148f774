// Writes one process's ring file: created once, then appended to lock-free by any thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "trace/comm_info.h"
#include "trace/record.h"
#include "trace/ring_layout.h"

namespace ncclscope::trace {

struct RingOptions {
  std::string dir;                   // created 0700 when missing; must be owned by this user
  uint64_t record_capacity = 65536;  // rounded up to a power of two
  uint32_t comm_capacity = 256;
  int global_rank = -1;
  int local_rank = -1;
  int world_size = -1;
  std::string job_id;
  uint32_t restart = 0;  // torchrun's restart count (FileHeader::restart)
  std::string host;      // in the header and the file name; empty: gethostname()
  uint32_t nccl_version = 0;
  // A presence file (kHeaderPresence): one record slot and one table entry, never written, named
  // <host>-<pid>-presence.ring so that a program that execs another in its place (same pid)
  // replaces its own file instead of leaving a second one. record_capacity and comm_capacity are
  // ignored.
  bool presence = false;
};

class RingWriter {
 public:
  // Creates <dir>/<host>-<pid>-<nonce>.ring (mode 0600) with all its blocks allocated up front, so
  // a full disk fails here and never as SIGBUS later (a presence file: see RingOptions::presence).
  // Returns nullptr and sets *error on failure. Not thread-safe; call once.
  static std::unique_ptr<RingWriter> Create(const RingOptions& options, std::string* error);
  ~RingWriter();
  RingWriter(const RingWriter&) = delete;
  RingWriter& operator=(const RingWriter&) = delete;

  // Hot path. Thread-safe, lock-free, no allocation, no system call. Returns the slot index, which
  // CompleteDevice and CloseCall take later (they fail when this record was dropped: the slot was
  // still owned by a writer preempted a whole lap ago). t_device_done_ns is set from
  // track_completion: PendingMarker(index) or kDoneUntracked. Inline (below) so a record built in
  // the caller can go from registers straight to the slot.
  uint64_t Append(const RecordData& record, bool track_completion);

  // Thread-safe, lock-free. Rewrites the record at slot_index with its final contents (exit time,
  // result, anything learnt during the call) after an Append at entry, unless the ring has wrapped
  // over it meanwhile (counted as dropped). The device completion word is left alone.
  bool CloseCall(uint64_t slot_index, const RecordData& record);

  // Thread-safe. Stores the device completion time if the slot still holds that record (it may have
  // been overwritten by a wrap). Returns whether it was stored. kDoneUntracked is a valid value: it
  // marks a pending record whose device work will never be observed (a failed group, say).
  bool CompleteDevice(uint64_t slot_index, int64_t t_done_ns);

  // Thread-safe. Publishes a communicator; counts it as dropped when the table is full.
  bool AddComm(const CommInfo& comm);

  // Thread-safe. Publishes a communicator whose creation call has not returned (state pending, see
  // ring_layout.h): its identity and name are final, the rest may change once through CompleteComm.
  // Returns the entry's index, or kNoCommEntry when the table is full (nothing is counted: the
  // AddComm of a creation that succeeds counts the drop).
  uint32_t AddPendingComm(const CommInfo& comm);
  // The creation of pending entry `index` returned with `comm` (rank, nranks, cuda_device,
  // created_monotonic_ns and handle are taken; the identity and name stay as published): rewrites
  // them in place and makes the entry valid. Once per entry; thread-safe for distinct entries.
  void CompleteComm(uint32_t index, const CommInfo& comm);
  // The creation of pending entry `index` failed: readers skip the entry from now on. Once per
  // entry instead of CompleteComm; thread-safe for distinct entries.
  void WithdrawComm(uint32_t index);

  // Thread-safe.
  void Heartbeat(int64_t monotonic_ns);
  void SetFlags(uint32_t flags);
  void ClearFlags(uint32_t flags);

  // Thread-safe, lock-free. Copies the record at slot_index into *out when the slot holds that
  // record, complete (false while it is being written or rewritten, or after a wrap gave the slot
  // to a newer record). For in-process readers of their own ring (the watchdog).
  bool ReadSlot(uint64_t slot_index, RecordData* out) const;
  uint64_t capacity() const { return mask_ + 1; }
  void SetGlobalRank(int global_rank, int world_size);
  // Thread-safe, first call wins. Records the UUID of this process's GPU in the header (at most
  // kGpuUuidBytes - 1 characters).
  void SetGpuUuid(const std::string& uuid);
  bool HasGpuUuid() const;
  int GlobalRank() const;
  void CountDroppedRecord();
  void CountUntrackedCompletion();
  void CountUnknownCommRecord();
  void CountNumericsSkipped();

  const std::string& path() const { return path_; }
  const FileHeader& header() const { return *header_; }

 private:
  RingWriter() = default;
  // Claims the next table entry and publishes comm in `state`; kNoCommEntry when the table is full.
  uint32_t PublishComm(const CommInfo& comm, uint32_t state);
  static void StoreMutableCommFields(CommEntry& e, const CommInfo& comm);
  std::string path_;
  void* base_ = nullptr;
  size_t bytes_ = 0;
  FileHeader* header_ = nullptr;
  CommEntry* comms_ = nullptr;
  RecordSlot* slots_ = nullptr;
  uint64_t mask_ = 0;
};

inline uint64_t RingWriter::Append(const RecordData& record, bool track_completion) {
  const uint64_t index = header_->write_pos.fetch_add(1, std::memory_order_relaxed);
  RecordSlot& slot = slots_[index & mask_];
  const auto* src = reinterpret_cast<const unsigned char*>(&record);
  // Seqlock with an owner: readers see commit != index + 1 while the words change and discard the
  // copy. The slot is claimed only from an older whole record; when another writer still owns it
  // (it was preempted for a whole lap of the ring) or a newer one already took it, this record is
  // dropped and counted rather than waited for or mixed with theirs.
  uint64_t seen = slot.commit.load(std::memory_order_relaxed);
  if ((seen & kSlotWriting) != 0 || seen > index ||
      !slot.commit.compare_exchange_strong(seen, kSlotWriting | (index + 1),
                                           std::memory_order_relaxed)) {
    CountDroppedRecord();
    return index;
  }
  std::atomic_thread_fence(std::memory_order_release);
  // Word by word from the record itself: no staging copy, so an inlined caller's record can go
  // from registers to the slot.
  for (size_t i = 0; i < 15; ++i) {
    uint64_t word;
    std::memcpy(&word, src + i * 8, 8);
    if (i == kDeviceDoneWord) {
      word = static_cast<uint64_t>(track_completion ? PendingMarker(index) : kDoneUntracked);
    }
    slot.words[i].store(word, std::memory_order_relaxed);
  }
  slot.commit.store(index + 1, std::memory_order_release);
  return index;
}

}  // namespace ncclscope::trace
