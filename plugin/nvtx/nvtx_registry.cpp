#include "plugin/nvtx/nvtx_registry.h"

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
// The first "NCCL" domain created: every NCCL call pushes and pops in it, so it is compared first.
std::atomic<const void*> g_nccl_domain{nullptr};

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
// The newest NCCL range's message, written racily by design: a test reads it after the calls
// returned. NCCL names its ranges with registered strings: the handle is kept, the copy looked up
// when read. A plain string (or none) is copied into g_last_nccl.
std::atomic<const void*> g_last_nccl_handle{nullptr};
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
  if (nccl && g_nccl_domain.load(std::memory_order_relaxed) == nullptr) {
    g_nccl_domain.store(handle, std::memory_order_relaxed);
  }
  return nccl ? kNcclDomain : static_cast<uint8_t>(slot);
}

uint8_t DomainSlot(const void* handle) noexcept {
  if (handle == nullptr) return kDefaultDomain;
  if (handle == g_nccl_domain.load(std::memory_order_relaxed)) return kNcclDomain;
  const uint32_t n = g_domain_count.load(std::memory_order_acquire);
  for (uint32_t i = 1; i < n; ++i) {
    if (g_domains[i].handle.load(std::memory_order_relaxed) == handle) {
      return g_domains[i].nccl ? kNcclDomain : static_cast<uint8_t>(i);
    }
  }
  return kUnstackedDomain;
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

void NoteNcclRange(const char* ascii, const void* registered) noexcept {
  // A plain load and store, not a locked add: a diagnostic count on every NCCL call.
  g_nccl_ranges.store(g_nccl_ranges.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (registered != nullptr) {
    g_last_nccl_handle.store(registered, std::memory_order_release);
    return;
  }
  const size_t len = ascii != nullptr ? strnlen(ascii, kNvtxNameChars) : 0;
  if (len != 0) std::memcpy(g_last_nccl, ascii, len);
  g_last_nccl_len.store(static_cast<uint8_t>(len), std::memory_order_release);
  g_last_nccl_handle.store(nullptr, std::memory_order_release);
}

size_t LastNcclRange(char* out, size_t cap) noexcept {
  if (cap == 0) return 0;
  const char* text = g_last_nccl;
  uint8_t stored = g_last_nccl_len.load(std::memory_order_acquire);
  if (const void* h = g_last_nccl_handle.load(std::memory_order_acquire)) {
    text = RegisteredString(h, &stored);
    if (text == nullptr) stored = 0;  // the string table was full when it was registered
  }
  size_t len = stored;
  if (len >= cap) len = cap - 1;
  if (len != 0) std::memcpy(out, text, len);
  out[len] = '\0';
  return len;
}

}  // namespace ncclscope::plugin
