#include "trace/ring_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "trace/clock.h"
#include "trace/job_layout.h"
#include "trace/trace_dir.h"

namespace ncclscope::trace {
namespace {

uint64_t RoundUpPow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

void CopyTruncated(char* dst, size_t cap, const std::string& src) {
  size_t n = src.size() < cap - 1 ? src.size() : cap - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

const char* Getenv(const char* name) {
  return std::getenv(name);
}

}  // namespace

std::unique_ptr<RingWriter> RingWriter::Create(const RingOptions& options, std::string* error) {
  if (!EnsurePrivateDir(options.dir, error)) return nullptr;
  const uint64_t capacity =
      options.presence ? 1
                       : RoundUpPow2(options.record_capacity < 64 ? 64 : options.record_capacity);
  const uint32_t comm_capacity =
      options.presence || options.comm_capacity == 0 ? 1 : options.comm_capacity;
  const size_t comm_table_bytes = (comm_capacity * sizeof(CommEntry) + 4095) & ~size_t{4095};
  const size_t bytes = kHeaderBytes + comm_table_bytes + capacity * sizeof(RecordSlot);

  // A random nonce keeps names unique when a pid is reused inside one job directory.
  std::random_device rd;
  // The name readers compare with their own host (ProcessProbe::ThisHost) and exporters filter on:
  // the same rule on both sides (job_layout.h).
  const std::string host = options.host.empty() ? ThisHostName(Getenv) : options.host;
  char name[kHostBytes + 64];
  if (options.presence) {
    snprintf(name, sizeof name, "%s-%d-presence.ring", host.c_str(), static_cast<int>(getpid()));
  } else {
    snprintf(name, sizeof name, "%s-%d-%08x.ring", host.c_str(), static_cast<int>(getpid()), rd());
  }
  const std::string path = options.dir + "/" + name;
  // Built under a hidden name and renamed once its header is whole: a reader listing *.ring (the
  // exporter's scrape, analyze) never meets an empty or half-written file and calls it damaged.
  const std::string building = options.dir + "/." + name + ".new";
  // A presence file's name is this pid's: a leftover of an earlier image of this process (killed
  // while building it) or of a process that had this pid before is ours to replace.
  if (options.presence) unlink(building.c_str());

  int fd = open(building.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = path + ": cannot create: " + std::strerror(errno);
    return nullptr;
  }
  // Reserve every block now: a lazily allocated mapping would SIGBUS the host on a full disk.
  int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    *error = path + ": cannot reserve " + std::to_string(bytes) + " bytes: " + std::strerror(rc);
    close(fd);
    unlink(building.c_str());
    return nullptr;
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    *error = path + ": mmap failed: " + std::strerror(errno);
    unlink(building.c_str());
    return nullptr;
  }

  std::unique_ptr<RingWriter> w(new RingWriter());
  w->path_ = path;
  w->base_ = base;
  w->bytes_ = bytes;
  w->mask_ = capacity - 1;
  auto* bytes_base = static_cast<char*>(base);
  w->header_ = new (bytes_base) FileHeader();
  w->comms_ = reinterpret_cast<CommEntry*>(bytes_base + kHeaderBytes);
  w->slots_ = reinterpret_cast<RecordSlot*>(bytes_base + kHeaderBytes + comm_table_bytes);

  FileHeader* h = w->header_;
  h->format_version = kRingFormatVersion;
  h->header_bytes = kHeaderBytes;
  h->record_bytes = sizeof(RecordSlot);
  h->comm_capacity = comm_capacity;
  h->record_capacity = capacity;
  h->comm_table_offset = kHeaderBytes;
  h->records_offset = kHeaderBytes + comm_table_bytes;
  h->file_bytes = bytes;
  h->pid = static_cast<int32_t>(getpid());
  h->local_rank = options.local_rank;
  CopyTruncated(h->host, kHostBytes, host);
  CopyTruncated(h->job_id, kJobIdBytes, options.job_id);
  h->restart = options.restart;
  h->start_realtime_ns = RealtimeNs();
  h->start_monotonic_ns = MonotonicNs();
  h->nccl_version = options.nccl_version;
  h->heartbeat_monotonic_ns.store(h->start_monotonic_ns, std::memory_order_relaxed);
  h->global_rank.store(options.global_rank, std::memory_order_relaxed);
  h->world_size.store(options.world_size, std::memory_order_relaxed);
  if (options.presence) h->flags.store(kHeaderPresence, std::memory_order_relaxed);
  // The magic goes last: a reader never accepts a header that is still being filled in.
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(h->magic, kRingMagic, sizeof kRingMagic);
  if (rename(building.c_str(), path.c_str()) != 0) {
    *error = path + ": cannot publish: " + std::strerror(errno);
    unlink(building.c_str());
    return nullptr;  // w unmaps
  }
  return w;
}

RingWriter::~RingWriter() {
  if (base_ != nullptr) munmap(base_, bytes_);
}

bool RingWriter::CloseCall(uint64_t slot_index, const RecordData& record) {
  RecordSlot& slot = slots_[slot_index & mask_];
  // Claim the slot back from readers; failing means a wrap gave it to a newer record.
  uint64_t expected = slot_index + 1;
  if (!slot.commit.compare_exchange_strong(expected, kSlotWriting | (slot_index + 1),
                                           std::memory_order_acquire, std::memory_order_relaxed)) {
    header_->dropped_records.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  std::atomic_thread_fence(std::memory_order_release);
  uint64_t words[15];
  std::memcpy(words, &record, sizeof words);
  for (size_t i = 0; i < 15; ++i) {
    if (i != kDeviceDoneWord) slot.words[i].store(words[i], std::memory_order_relaxed);
  }
  slot.commit.store(slot_index + 1, std::memory_order_release);
  return true;
}

bool RingWriter::CompleteDevice(uint64_t slot_index, int64_t t_done_ns) {
  RecordSlot& slot = slots_[slot_index & mask_];
  // The pending marker is unique to this index, so a wrapped slot's newer record is never touched.
  auto expected = static_cast<uint64_t>(PendingMarker(slot_index));
  return slot.words[kDeviceDoneWord].compare_exchange_strong(
      expected, static_cast<uint64_t>(t_done_ns), std::memory_order_release,
      std::memory_order_relaxed);
}

uint32_t RingWriter::PublishComm(const CommInfo& comm, uint32_t state) {
  const uint32_t i = header_->comm_count.fetch_add(1, std::memory_order_relaxed);
  if (i >= header_->comm_capacity) {
    header_->comm_count.fetch_sub(1, std::memory_order_relaxed);
    return kNoCommEntry;
  }
  CommEntry& e = comms_[i];
  e.state.store(kCommEntryWriting, std::memory_order_relaxed);
  e.origin = comm.origin;
  e.id = comm.id;
  e.parent_id = comm.parent_id;
  e.color = comm.color;
  e.key = comm.key;
  e.split_index = comm.split_index;
  CopyTruncated(e.name, kCommNameBytes, comm.name);
  StoreMutableCommFields(e, comm);
  e.state.store(state, std::memory_order_release);
  return i;
}

void RingWriter::StoreMutableCommFields(CommEntry& e, const CommInfo& comm) {
  StoreCommField(e.rank, static_cast<int32_t>(comm.rank));
  StoreCommField(e.nranks, static_cast<int32_t>(comm.nranks));
  StoreCommField(e.cuda_device, static_cast<int32_t>(comm.cuda_device));
  StoreCommField(e.created_monotonic_ns, comm.created_monotonic_ns);
  StoreCommField(e.handle, comm.handle);
}

bool RingWriter::AddComm(const CommInfo& comm) {
  if (PublishComm(comm, kCommEntryValid) != kNoCommEntry) return true;
  header_->dropped_comms.fetch_add(1, std::memory_order_relaxed);
  return false;
}

uint32_t RingWriter::AddPendingComm(const CommInfo& comm) {
  return PublishComm(comm, kCommEntryPending);
}

void RingWriter::CompleteComm(uint32_t index, const CommInfo& comm) {
  if (index >= header_->comm_capacity) return;
  CommEntry& e = comms_[index];
  // A reader that copied the fields while they changed sees the state move and copies again.
  e.state.store(kCommEntryUpdating, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  StoreMutableCommFields(e, comm);
  e.state.store(kCommEntryValid, std::memory_order_release);
}

void RingWriter::WithdrawComm(uint32_t index) {
  if (index >= header_->comm_capacity) return;
  comms_[index].state.store(kCommEntryWithdrawn, std::memory_order_release);
}

void RingWriter::Heartbeat(int64_t monotonic_ns) {
  header_->heartbeat_monotonic_ns.store(monotonic_ns, std::memory_order_relaxed);
}

void RingWriter::SetFlags(uint32_t flags) {
  header_->flags.fetch_or(flags, std::memory_order_relaxed);
}

void RingWriter::ClearFlags(uint32_t flags) {
  header_->flags.fetch_and(~flags, std::memory_order_relaxed);
}

bool RingWriter::ReadSlot(uint64_t slot_index, RecordData* out) const {
  const RecordSlot& slot = slots_[slot_index & mask_];
  if (slot.commit.load(std::memory_order_acquire) != slot_index + 1) return false;
  uint64_t words[15];
  for (size_t i = 0; i < 15; ++i) words[i] = slot.words[i].load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (slot.commit.load(std::memory_order_relaxed) != slot_index + 1) return false;
  std::memcpy(out, words, sizeof words);
  return true;
}

void RingWriter::SetGlobalRank(int global_rank, int world_size) {
  header_->global_rank.store(global_rank, std::memory_order_relaxed);
  header_->world_size.store(world_size, std::memory_order_relaxed);
}

void RingWriter::SetGpuUuid(const std::string& uuid) {
  const size_t n = std::min(uuid.size(), kGpuUuidBytes - 1);
  uint32_t expected = 0;
  // Claim the field (a length no reader accepts) so two threads never interleave their bytes.
  if (n == 0 || !header_->gpu_uuid_len.compare_exchange_strong(
                    expected, static_cast<uint32_t>(kGpuUuidBytes), std::memory_order_relaxed)) {
    return;
  }
  std::memcpy(header_->gpu_uuid, uuid.data(), n);
  header_->gpu_uuid[n] = '\0';
  header_->gpu_uuid_len.store(static_cast<uint32_t>(n), std::memory_order_release);
}

bool RingWriter::HasGpuUuid() const {
  return header_->gpu_uuid_len.load(std::memory_order_relaxed) != 0;
}

int RingWriter::GlobalRank() const {
  return header_->global_rank.load(std::memory_order_relaxed);
}

void RingWriter::CountDroppedRecord() {
  header_->dropped_records.fetch_add(1, std::memory_order_relaxed);
}

void RingWriter::CountUnknownCommRecord() {
  header_->unknown_comm_records.fetch_add(1, std::memory_order_relaxed);
}

void RingWriter::CountNumericsSkipped() {
  header_->numerics_skipped.fetch_add(1, std::memory_order_relaxed);
}

void RingWriter::CountUntrackedCompletion() {
  header_->untracked_completions.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace ncclscope::trace
