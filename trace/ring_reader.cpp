#include "trace/ring_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "trace/ring_layout.h"

namespace ncclscope::trace {
namespace {

// Upper bounds that no writer produces; larger values mean a corrupt header, not a big ring.
constexpr uint64_t kMaxRecordCapacity = uint64_t{1} << 32;
constexpr uint32_t kMaxCommCapacity = 1u << 20;

std::string Bounded(const char* s, size_t cap) {
  return std::string(s, strnlen(s, cap));
}

bool Fail(std::string* error, const std::string& name, const std::string& what) {
  *error = name + ": " + what;
  return false;
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
  if (h.file_bytes > size) {
    return Fail(error, name,
                "truncated: header says " + std::to_string(h.file_bytes) + " bytes, file has " +
                    std::to_string(size));
  }
  return true;
}

void ReadComms(const char* base, const FileHeader& h, RingSnapshot* out) {
  const auto* entries = reinterpret_cast<const CommEntry*>(base + h.comm_table_offset);
  const uint32_t n = std::min(h.comm_count.load(std::memory_order_acquire), h.comm_capacity);
  for (uint32_t i = 0; i < n; ++i) {
    const CommEntry& e = entries[i];
    if (e.state.load(std::memory_order_acquire) != kCommEntryValid) continue;
    CommInfo c;
    c.id = e.id;
    c.parent_id = e.parent_id;
    c.origin = e.origin;
    c.rank = e.rank;
    c.nranks = e.nranks;
    c.color = e.color;
    c.key = e.key;
    c.split_index = e.split_index;
    c.cuda_device = e.cuda_device;
    c.created_monotonic_ns = e.created_monotonic_ns;
    c.handle = e.handle;
    c.name = Bounded(e.name, kCommNameBytes);
    out->comms.push_back(std::move(c));
  }
}

void ReadRecords(const char* base, const FileHeader& h, RingSnapshot* out) {
  const auto* slots = reinterpret_cast<const RecordSlot*>(base + h.records_offset);
  const uint64_t cap = h.record_capacity;
  const uint64_t end = h.write_pos.load(std::memory_order_acquire);
  const uint64_t begin = end > cap ? end - cap : 0;
  out->records.reserve(end - begin);
  for (uint64_t index = begin; index < end; ++index) {
    const RecordSlot& slot = slots[index & (cap - 1)];
    if (slot.commit.load(std::memory_order_acquire) != index + 1) {
      ++out->torn_records;
      continue;
    }
    uint64_t words[15];
    for (int i = 0; i < 15; ++i) words[i] = slot.words[i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.commit.load(std::memory_order_relaxed) != index + 1) {
      ++out->torn_records;  // overwritten while we copied it
      continue;
    }
    StoredRecord r;
    r.index = index;
    std::memcpy(&r.data, words, sizeof words);
    out->records.push_back(r);
  }
  out->write_pos = end;
  out->overwritten = begin;
}

}  // namespace

std::optional<RingSnapshot> ParseRing(const void* data, size_t size, const std::string& name,
                                      std::string* error) {
  if (size < kHeaderBytes) {
    Fail(error, name,
         "truncated: " + std::to_string(size) + " bytes, smaller than the " +
             std::to_string(kHeaderBytes) + "-byte header");
    return std::nullopt;
  }
  // Atomic loads need aligned memory; a caller's buffer (a fuzzer's, say) may not be.
  std::unique_ptr<uint64_t[]> aligned;
  if (reinterpret_cast<uintptr_t>(data) % alignof(RecordSlot) != 0) {
    aligned.reset(new uint64_t[(size + 7) / 8]);
    std::memcpy(aligned.get(), data, size);
    data = aligned.get();
  }
  const char* base = static_cast<const char*>(data);
  const auto& h = *reinterpret_cast<const FileHeader*>(base);
  if (!ValidateHeader(h, size, name, error)) return std::nullopt;

  RingSnapshot s;
  s.path = name;
  s.format_version = h.format_version;
  s.pid = h.pid;
  s.global_rank = h.global_rank.load(std::memory_order_relaxed);
  s.local_rank = h.local_rank;
  s.world_size = h.world_size.load(std::memory_order_relaxed);
  s.host = Bounded(h.host, kHostBytes);
  s.job_id = Bounded(h.job_id, kJobIdBytes);
  s.start_realtime_ns = h.start_realtime_ns;
  s.start_monotonic_ns = h.start_monotonic_ns;
  s.heartbeat_monotonic_ns = h.heartbeat_monotonic_ns.load(std::memory_order_relaxed);
  s.nccl_version = h.nccl_version;
  s.flags = h.flags.load(std::memory_order_relaxed);
  s.record_capacity = h.record_capacity;
  s.dropped_records = h.dropped_records.load(std::memory_order_relaxed);
  s.dropped_comms = h.dropped_comms.load(std::memory_order_relaxed);
  s.untracked_completions = h.untracked_completions.load(std::memory_order_relaxed);
  s.unknown_comm_records = h.unknown_comm_records.load(std::memory_order_relaxed);
  ReadComms(base, h, &s);
  ReadRecords(base, h, &s);
  return s;
}

std::optional<RingSnapshot> ReadRingFile(const std::string& path, std::string* error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    Fail(error, path, std::string("cannot open: ") + std::strerror(errno));
    return std::nullopt;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    Fail(error, path, "not a regular file");
    return std::nullopt;
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size < kHeaderBytes) {
    close(fd);
    Fail(error, path,
         "truncated: " + std::to_string(size) + " bytes, smaller than the " +
             std::to_string(kHeaderBytes) + "-byte header");
    return std::nullopt;
  }
  // Shared mapping: the reader sees the writer's stores as they happen, file or page cache alike.
  void* base = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    Fail(error, path, std::string("mmap failed: ") + std::strerror(errno));
    return std::nullopt;
  }
  auto snapshot = ParseRing(base, size, path, error);
  munmap(base, size);
  return snapshot;
}

std::vector<std::string> ListRingFiles(const std::string& dir, std::string* error) {
  std::vector<std::string> files;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    *error = dir + ": cannot read directory: " + std::strerror(errno);
    return files;
  }
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".ring") == 0) {
      files.push_back(dir + "/" + name);
    }
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace ncclscope::trace
