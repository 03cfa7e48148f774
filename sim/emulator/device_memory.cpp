#include "sim/emulator/device_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>

#include "sim/emulator/env_config.h"

namespace ncclsim {
namespace {

struct Entry {
  DeviceRange range;
  pid_t owner = 0;  // allocating process; a forked child inherits entries it does not own
  int opens = 0;    // imported ranges: openings not yet closed
};

// Leaked on purpose: the exit-time unlink and stream workers may run after static destruction.
struct Registry {
  std::mutex mu;
  std::map<uintptr_t, Entry> by_base;
};

Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

std::string newSegmentName() {
  static const std::string tag = envToken("NCCLSIM_JOB_TAG", "default");
  static std::atomic<unsigned long long> serial{0};
  char tail[48];
  std::snprintf(tail, sizeof tail, "-dm%x-%llx", unsigned(getpid()), ++serial);
  return "/ncclsim-" + tag + tail;
}

// Maps all of object `fd`; nullptr on failure.
void* mapWhole(int fd, size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// Entry whose range contains p, or nullptr. Caller holds the registry's mutex.
Entry* containing(Registry& r, uintptr_t p) {
  auto it = r.by_base.upper_bound(p);
  if (it == r.by_base.begin()) return nullptr;
  --it;
  return p - it->first < it->second.range.bytes ? &it->second : nullptr;
}

// A process that exits without freeing leaves no object behind (best effort: not on _exit or a
// kill; the launcher then removes the job's names).
__attribute__((destructor)) void unlinkOwnSegmentsAtExit() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& [base, e] : r.by_base) {
    if (!e.range.imported && e.owner == getpid()) shm_unlink(e.range.segment.c_str());
  }
}

}  // namespace

CUresult allocateDeviceMemory(size_t bytes, CUdeviceptr* out) {
  if (bytes == 0 || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::string name = newSegmentName();
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = ftruncate(fd, off_t(bytes)) == 0 ? mapWhole(fd, bytes) : nullptr;
  close(fd);
  if (p == nullptr) {
    shm_unlink(name.c_str());
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  Entry& e = r.by_base[uintptr_t(p)];
  e.range = DeviceRange{uintptr_t(p), bytes, name, false};
  e.owner = getpid();
  *out = CUdeviceptr(uintptr_t(p));
  return CUDA_SUCCESS;
}

CUresult freeDeviceMemory(CUdeviceptr base) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_base.find(uintptr_t(base));
  if (it == r.by_base.end() || it->second.range.imported) return CUDA_ERROR_INVALID_VALUE;
  const Entry& e = it->second;
  munmap(reinterpret_cast<void*>(e.range.base), e.range.bytes);
  if (e.owner == getpid()) shm_unlink(e.range.segment.c_str());
  r.by_base.erase(it);
  return CUDA_SUCCESS;
}

bool findDeviceRange(uintptr_t p, size_t bytes, DeviceRange* out) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const Entry* e = containing(r, p);
  if (e == nullptr) return false;
  const size_t room = e->range.bytes - (p - e->range.base);
  if (bytes > room) return false;
  if (out != nullptr) *out = e->range;
  return true;
}

CUresult openSegment(const std::string& segment, CUdeviceptr* base) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (auto& [b, e] : r.by_base) {
    if (e.range.segment != segment) continue;
    if (!e.range.imported && e.owner == getpid()) return CUDA_ERROR_INVALID_CONTEXT;
    if (e.range.imported) {
      ++e.opens;
      *base = CUdeviceptr(b);
      return CUDA_SUCCESS;
    }
  }
  int fd = shm_open(segment.c_str(), O_RDWR, 0600);
  if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;
  struct stat st;
  void* p = fstat(fd, &st) == 0 && st.st_size > 0 ? mapWhole(fd, size_t(st.st_size)) : nullptr;
  close(fd);
  if (p == nullptr) return CUDA_ERROR_MAP_FAILED;
  Entry& e = r.by_base[uintptr_t(p)];
  e.range = DeviceRange{uintptr_t(p), size_t(st.st_size), segment, true};
  e.owner = getpid();
  e.opens = 1;
  *base = CUdeviceptr(uintptr_t(p));
  return CUDA_SUCCESS;
}

CUresult closeSegment(CUdeviceptr base) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_base.find(uintptr_t(base));
  if (it == r.by_base.end() || !it->second.range.imported) return CUDA_ERROR_INVALID_VALUE;
  if (--it->second.opens > 0) return CUDA_SUCCESS;
  munmap(reinterpret_cast<void*>(it->second.range.base), it->second.range.bytes);
  r.by_base.erase(it);
  return CUDA_SUCCESS;
}

}  // namespace ncclsim
