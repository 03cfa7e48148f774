#include "trace/ring_visitor.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>

#include "trace/regular_file.h"
#include "trace/ring_layout.h"

namespace ncclscope::trace {
namespace {

// Upper bounds that no writer produces; larger values mean a corrupt header, not a big ring.
constexpr uint64_t kMaxRecordCapacity = uint64_t{1} << 32;
constexpr uint32_t kMaxCommCapacity = 1u << 20;
// Clock readings no writer produces: CLOCK_MONOTONIC past 36 years of uptime, CLOCK_REALTIME past
// the year 2116, negative times. Beyond them a value is damage; bounding them also keeps every sum
// and difference readers take (wall = monotonic + realtime - monotonic, waits between two ranks'
// times) inside int64.
constexpr int64_t kMaxMonotonicNs = int64_t{1} << 60;
constexpr int64_t kMaxRealtimeNs = int64_t{1} << 62;
bool PlausibleMonotonic(int64_t t) {
  return t >= 0 && t < kMaxMonotonicNs;
}
// A record's times: entry and exit as read on the clock (exit 0 while inside the call), device
// completion a time or a sentinel (negative: pending or untracked).
bool PlausibleTimes(const RecordData& r) {
  return PlausibleMonotonic(r.t_enter_ns) && PlausibleMonotonic(r.t_exit_ns) &&
         (r.t_device_done_ns < 0 || PlausibleMonotonic(r.t_device_done_ns));
}
// Records per visitor call: small enough to stay in L1/L2, large enough to amortize the call.
constexpr size_t kBatch = 128;

std::string Bounded(const char* s, size_t cap) {
  return std::string(s, strnlen(s, cap));
}

bool Fail(std::string* error, const std::string& name, const std::string& what) {
  *error = name + ": " + what;
  return false;
}

std::string TooSmall(size_t size) {
  return "truncated: " + std::to_string(size) + " bytes, smaller than the " +
         std::to_string(kHeaderBytes) + "-byte header";
}

bool ValidateHeader(const FileHeader& h, size_t size, const std::string& name, std::string* error) {
  if (std::memcmp(h.magic, kRingMagic, sizeof kRingMagic) != 0) {
    return Fail(error, name, "not an ncclscope ring file (bad magic)");
  }
  if (h.format_version != kRingFormatVersion) {
    return Fail(error, name,
                "unsupported format version " + std::to_string(h.format_version) +
                    " (this build reads version " + std::to_string(kRingFormatVersion) + ")");
  }
  if (h.header_bytes != kHeaderBytes || h.record_bytes != sizeof(RecordSlot)) {
    return Fail(error, name, "corrupt header: unexpected header or record size");
  }
  const uint64_t cap = h.record_capacity;
  if (cap == 0 || cap > kMaxRecordCapacity || (cap & (cap - 1)) != 0) {
    return Fail(error, name, "corrupt header: record capacity " + std::to_string(cap));
  }
  if (h.comm_capacity == 0 || h.comm_capacity > kMaxCommCapacity) {
    return Fail(error, name, "corrupt header: comm capacity " + std::to_string(h.comm_capacity));
  }
  const uint64_t comm_end = h.comm_table_offset + uint64_t{h.comm_capacity} * sizeof(CommEntry);
  if (h.comm_table_offset != kHeaderBytes || h.records_offset < comm_end ||
      h.records_offset % alignof(RecordSlot) != 0 ||
      h.file_bytes != h.records_offset + cap * sizeof(RecordSlot)) {
    return Fail(error, name, "corrupt header: inconsistent section offsets");
  }
  if (h.start_realtime_ns < 0 || h.start_realtime_ns >= kMaxRealtimeNs ||
      !PlausibleMonotonic(h.start_monotonic_ns) ||
      !PlausibleMonotonic(h.heartbeat_monotonic_ns.load(std::memory_order_relaxed))) {
    return Fail(error, name, "corrupt header: clock readings out of range");
  }
  if (h.file_bytes > size) {
    return Fail(error, name,
                "truncated: header says " + std::to_string(h.file_bytes) + " bytes, file has " +
                    std::to_string(size));
  }
  return true;
}

void ReadHeader(const FileHeader& h, const std::string& name, RingInfo* out) {
  out->path = name;
  out->format_version = h.format_version;
  out->pid = h.pid;
  out->global_rank = h.global_rank.load(std::memory_order_relaxed);
  out->local_rank = h.local_rank;
  out->world_size = h.world_size.load(std::memory_order_relaxed);
  out->host = Bounded(h.host, kHostBytes);
  out->job_id = Bounded(h.job_id, kJobIdBytes);
  out->restart = h.restart;
  if (const uint32_t n = h.gpu_uuid_len.load(std::memory_order_acquire); n < kGpuUuidBytes) {
    out->gpu_uuid = Bounded(h.gpu_uuid, n);
  }
  out->start_realtime_ns = h.start_realtime_ns;
  out->start_monotonic_ns = h.start_monotonic_ns;
  out->heartbeat_monotonic_ns = h.heartbeat_monotonic_ns.load(std::memory_order_relaxed);
  out->nccl_version = h.nccl_version;
  out->flags = h.flags.load(std::memory_order_relaxed);
  out->record_capacity = h.record_capacity;
  out->dropped_records = h.dropped_records.load(std::memory_order_relaxed);
  out->dropped_comms = h.dropped_comms.load(std::memory_order_relaxed);
  out->untracked_completions = h.untracked_completions.load(std::memory_order_relaxed);
  out->unknown_comm_records = h.unknown_comm_records.load(std::memory_order_relaxed);
  out->numerics_skipped = h.numerics_skipped.load(std::memory_order_relaxed);
}

bool Published(uint32_t state) {
  return state == kCommEntryValid || state == kCommEntryPending || state == kCommEntryUpdating;
}

// Copies of a pending entry tried while its one rewrite runs, before giving up on its rank and
// size.
constexpr int kCommCopyAttempts = 16;

// Reads one table entry into *c; false when it holds no communicator (empty, being written for the
// first time, withdrawn, or an unknown state).
bool ReadCommEntry(const CommEntry& e, CommInfo* c) {
  uint32_t state = e.state.load(std::memory_order_acquire);
  if (!Published(state)) return false;
  // Written before the entry was first published and never again.
  c->id = e.id;
  c->parent_id = e.parent_id;
  c->origin = e.origin;
  c->color = e.color;
  c->key = e.key;
  c->split_index = e.split_index;
  c->name = Bounded(e.name, kCommNameBytes);
  for (int attempt = 0; attempt < kCommCopyAttempts; ++attempt) {
    if (state != kCommEntryUpdating) {
      c->rank = LoadCommField(e.rank);
      c->nranks = LoadCommField(e.nranks);
      c->cuda_device = LoadCommField(e.cuda_device);
      c->created_monotonic_ns = LoadCommField(e.created_monotonic_ns);
      c->handle = LoadCommField(e.handle);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (e.state.load(std::memory_order_relaxed) == state) {
        c->pending = state == kCommEntryPending;
        return true;
      }
    }
    state = e.state.load(std::memory_order_acquire);
    if (!Published(state)) return false;  // withdrawn meanwhile
  }
  // The rewrite outlasted the attempts, or its writer died inside it: the communicator and its
  // name are known, what the creation returned is not.
  c->rank = -1;
  c->nranks = -1;
  c->cuda_device = -1;
  c->handle = 0;
  c->pending = true;
  return true;
}

void ReadComms(const char* base, const FileHeader& h, RingInfo* out) {
  const auto* entries = reinterpret_cast<const CommEntry*>(base + h.comm_table_offset);
  const uint32_t n = std::min(h.comm_count.load(std::memory_order_acquire), h.comm_capacity);
  for (uint32_t i = 0; i < n; ++i) {
    CommInfo c;
    if (ReadCommEntry(entries[i], &c)) out->comms.push_back(std::move(c));
  }
}

enum class SlotRead { kWhole, kTorn, kOlder };

// Copies one slot under its seqlock. kTorn: mid-write, overwritten meanwhile, or damaged (times no
// clock gives). kOlder: the slot holds a whole record of an earlier lap, which is what a writer
// leaves when it dropped its record because the slot was still owned by a preempted older writer.
SlotRead CopySlot(const RecordSlot& slot, uint64_t index, uint64_t mask, RecordData* out) {
  const uint64_t commit = slot.commit.load(std::memory_order_acquire);
  if (commit != index + 1) {
    const bool older = commit != 0 && (commit & kSlotWriting) == 0 && commit <= index &&
                       ((index + 1 - commit) & mask) == 0;
    return older ? SlotRead::kOlder : SlotRead::kTorn;
  }
  uint64_t words[15];
  for (int i = 0; i < 15; ++i) words[i] = slot.words[i].load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (slot.commit.load(std::memory_order_relaxed) != index + 1) return SlotRead::kTorn;
  std::memcpy(out, words, sizeof words);
  return PlausibleTimes(*out) ? SlotRead::kWhole : SlotRead::kTorn;
}

void VisitRecords(const char* base, const FileHeader& h, uint64_t begin, uint64_t end,
                  RingVisitor* visitor, RingInfo* info) {
  const auto* slots = reinterpret_cast<const RecordSlot*>(base + h.records_offset);
  const uint64_t mask = h.record_capacity - 1;
  StoredRecord batch[kBatch];
  size_t n = 0;
  uint64_t dropped_left = info->dropped_records;
  for (uint64_t index = begin; index < end; ++index) {
    StoredRecord& r = batch[n];
    const SlotRead read = CopySlot(slots[index & mask], index, mask, &r.data);
    if (read != SlotRead::kWhole) {
      // A drop is already counted in dropped_records; more older slots than drops is damage.
      if (read == SlotRead::kOlder && dropped_left > 0) {
        --dropped_left;
        if (n > 0) visitor->Records(batch, n);
        n = 0;
        visitor->Dropped(index);
      } else {
        ++info->torn_records;
      }
      continue;
    }
    r.index = index;
    if (++n == kBatch) {
      visitor->Records(batch, n);
      n = 0;
    }
  }
  if (n > 0) visitor->Records(batch, n);
}

}  // namespace

bool VisitRing(const void* data, size_t size, const std::string& name, RingVisitor* visitor,
               std::string* error) {
  return VisitRingFrom(data, size, name, 0, visitor, error);
}

bool VisitRingFrom(const void* data, size_t size, const std::string& name, uint64_t first,
                   RingVisitor* visitor, std::string* error) {
  if (size < kHeaderBytes) return Fail(error, name, TooSmall(size));
  // Atomic loads need aligned memory; a caller's buffer (a fuzzer's, say) may not be.
  std::unique_ptr<uint64_t[]> aligned;
  if (reinterpret_cast<uintptr_t>(data) % alignof(RecordSlot) != 0) {
    aligned.reset(new uint64_t[(size + 7) / 8]);
    std::memcpy(aligned.get(), data, size);
    data = aligned.get();
  }
  const char* base = static_cast<const char*>(data);
  const auto& h = *reinterpret_cast<const FileHeader*>(base);
  if (!ValidateHeader(h, size, name, error)) return false;

  RingInfo info;
  ReadHeader(h, name, &info);
  ReadComms(base, h, &info);
  const uint64_t cap = h.record_capacity;
  const uint64_t end = h.write_pos.load(std::memory_order_acquire);
  const uint64_t begin = end > cap ? end - cap : 0;
  info.write_pos = end;
  info.overwritten = begin;
  visitor->BeginFile(info);
  VisitRecords(base, h, std::max(begin, std::min(first, end)), end, visitor, &info);
  visitor->EndFile(info);
  return true;
}

bool VisitRingFile(const std::string& path, RingVisitor* visitor, std::string* error) {
  return VisitRingFileFrom(path, 0, visitor, error);
}

bool VisitRingFileFrom(const std::string& path, uint64_t first, RingVisitor* visitor,
                       std::string* error) {
  struct stat st {};
  std::string why;
  const int fd = OpenRegularFile(path, &st, &why);
  if (fd < 0) return Fail(error, path, why);
  const auto size = static_cast<size_t>(st.st_size);
  if (size < kHeaderBytes) {
    close(fd);
    return Fail(error, path, TooSmall(size));
  }
  // Shared mapping: the reader sees the writer's stores as they happen, file or page cache alike.
  void* base = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    return Fail(error, path, std::string("mmap failed: ") + std::strerror(errno));
  }
  // One pass from front to back: read ahead aggressively, drop pages behind (advice only).
  madvise(base, size, MADV_SEQUENTIAL);
  const bool ok = VisitRingFrom(base, size, path, first, visitor, error);
  munmap(base, size);
  return ok;
}

}  // namespace ncclscope::trace
