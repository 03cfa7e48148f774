#include "plugin/nvtx_registry.h"

#include <atomic>
#include <cstring>
#include <mutex>

namespace ncclscope::plugin {
namespace {

struct DomainEntry {
  std::atomic<const void*> handle{nullptr};
  bool nccl = false;
};
DomainEntry g_domains[kMaxDomains];  // slot 0: the default domain, never in the table
std::atomic<uint32_t> g_domain_count{1};

inline constexpr uint32_t kStringSlots = 1024;  // a power of two
struct StringEntry {
  std::atomic<const void*> handle{nullptr};
  uint8_t len = 0;
  char text[kNvtxNameChars + 1] = {};
};
StringEntry g_strings[kStringSlots];
std::mutex g_register_mutex;  // registration only, never on the push path
std::atomic<uintptr_t> g_next_string_handle{1};

std::atomic<uint64_t> g_nccl_ranges{0};
// The newest NCCL range name, written racily by design: a test reads it after the calls returned.
char g_last_nccl[kNvtxNameChars + 1];
std::atomic<uint8_t> g_last_nccl_len{0};

uint32_t StringHash(const void* handle) noexcept {
  const auto v = reinterpret_cast<uintptr_t>(handle);
  return static_cast<uint32_t>((v >> 3) ^ (v >> 17)) & (kStringSlots - 1);
}

}  // namespace

uint8_t RegisterDomain(const void* handle, const char* name) noexcept {
  const bool nccl = name != nullptr && std::strcmp(name, "NCCL") == 0;
  std::lock_guard<std::mutex> lock(g_register_mutex);
  const uint32_t slot = g_domain_count.load(std::memory_order_relaxed);
  if (slot >= kMaxDomains) return kUnstackedDomain;
  g_domains[slot].nccl = nccl;
  g_domains[slot].handle.store(handle, std::memory_order_release);
  g_domain_count.store(slot + 1, std::memory_order_release);
  return nccl ? kUnstackedDomain : static_cast<uint8_t>(slot);
}

uint8_t DomainSlot(const void* handle) noexcept {
  if (handle == nullptr) return kDefaultDomain;
  const uint32_t n = g_domain_count.load(std::memory_order_acquire);
  for (uint32_t i = 1; i < n; ++i) {
    if (g_domains[i].handle.load(std::memory_order_relaxed) == handle) {
      return g_domains[i].nccl ? kUnstackedDomain : static_cast<uint8_t>(i);
    }
  }
  return kUnstackedDomain;
}

bool IsNcclDomain(const void* handle) noexcept {
  const uint32_t n = g_domain_count.load(std::memory_order_acquire);
  for (uint32_t i = 1; i < n; ++i) {
    if (g_domains[i].handle.load(std::memory_order_relaxed) == handle) return g_domains[i].nccl;
  }
  return false;
}

bool RegisterString(const void* handle, const char* text, size_t len) noexcept {
  if (handle == nullptr) return false;
  if (len > kNvtxNameChars) len = kNvtxNameChars;
  std::lock_guard<std::mutex> lock(g_register_mutex);
  for (uint32_t probe = 0; probe < kStringSlots; ++probe) {
    StringEntry& e = g_strings[(StringHash(handle) + probe) & (kStringSlots - 1)];
    const void* h = e.handle.load(std::memory_order_relaxed);
    if (h == handle) return true;  // registered twice (same string, same handle)
    if (h != nullptr) continue;
    if (len != 0) std::memcpy(e.text, text, len);
    e.text[len] = '\0';
    e.len = static_cast<uint8_t>(len);
    e.handle.store(handle, std::memory_order_release);  // publishes text and len
    return true;
  }
  return false;
}

const char* RegisteredString(const void* handle, uint8_t* len) noexcept {
  if (handle == nullptr) return nullptr;
  for (uint32_t probe = 0; probe < kStringSlots; ++probe) {
    const StringEntry& e = g_strings[(StringHash(handle) + probe) & (kStringSlots - 1)];
    const void* h = e.handle.load(std::memory_order_acquire);
    if (h == handle) {
      *len = e.len;
      return e.text;
    }
    if (h == nullptr) return nullptr;
  }
  return nullptr;
}

const void* NewStringHandle() noexcept {
  // Distinct non-null values that are never dereferenced; multiples of 8 spread in the hash.
  return reinterpret_cast<const void*>(
      g_next_string_handle.fetch_add(1, std::memory_order_relaxed) * 8);
}

uint64_t NcclRangesSeen() noexcept {
  return g_nccl_ranges.load(std::memory_order_relaxed);
}

void NoteNcclRange(const char* name, size_t len) noexcept {
  g_nccl_ranges.fetch_add(1, std::memory_order_relaxed);
  if (len > kNvtxNameChars) len = kNvtxNameChars;
  if (name != nullptr && len != 0) std::memcpy(g_last_nccl, name, len);
  g_last_nccl_len.store(static_cast<uint8_t>(name != nullptr ? len : 0), std::memory_order_release);
}

size_t LastNcclRange(char* out, size_t cap) noexcept {
  if (cap == 0) return 0;
  size_t len = g_last_nccl_len.load(std::memory_order_acquire);
  if (len >= cap) len = cap - 1;
  std::memcpy(out, g_last_nccl, len);
  out[len] = '\0';
  return len;
}

}  // namespace ncclscope::plugin
