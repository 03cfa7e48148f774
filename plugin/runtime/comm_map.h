// ncclComm_t -> CommState, read lock-free on every intercepted call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "plugin/runtime/comm_state.h"

namespace ncclscope::plugin {

// Fixed-size open-addressing table. Keys are never removed: a destroyed handle keeps its slot with
// a null value, and a reused address (the allocator hands it out again) gets a new state in place.
// States are kept until the process ends, because a concurrent lookup may still hold one.
class CommMap {
 public:
  // capacity is rounded up to a power of two. Not thread-safe (construction).
  explicit CommMap(size_t capacity = 4096);
  CommMap(const CommMap&) = delete;
  CommMap& operator=(const CommMap&) = delete;

  // Hot path (inline, below). Thread-safe, lock-free, no allocation. Null for an unknown or
  // destroyed handle.
  CommState* Find(const void* handle) const noexcept;

  // Takes ownership of state and maps handle to it, replacing a previous mapping. Returns the
  // state, or null when the table is full (the state is then discarded). Thread-safe (locks).
  CommState* Insert(const void* handle, std::unique_ptr<CommState> state);

  // Unmaps handle (its state stays owned by the map). Thread-safe (locks).
  void Erase(const void* handle);

  // Calls f(handle, state) for every mapped handle. Lock-free; a concurrent insert or erase may or
  // may not be seen. Off the hot path (the watchdog).
  template <typename F>
  void ForEach(F&& f) const {
    for (size_t i = 0; i <= mask_; ++i) {
      const uintptr_t k = slots_[i].key.load(std::memory_order_acquire);
      CommState* v = slots_[i].value.load(std::memory_order_acquire);
      if (k != 0 && v != nullptr) f(reinterpret_cast<void*>(k), v);
    }
  }

  // Locked by fork handlers so a child never inherits a half-done insert. Thread-safe.
  std::mutex& insert_mutex() { return mutex_; }

 private:
  struct Slot {
    std::atomic<uintptr_t> key{0};
    std::atomic<CommState*> value{nullptr};
  };
  size_t IndexOf(uintptr_t key) const noexcept {
    // Handles are heap addresses: the low bits are alignment, so mix before masking.
    uint64_t h = key;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return static_cast<size_t>(h) & mask_;
  }

  size_t mask_;
  std::unique_ptr<Slot[]> slots_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<CommState>> owned_;  // guarded by mutex_
};

inline CommState* CommMap::Find(const void* handle) const noexcept {
  const auto key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0) return nullptr;
  size_t i = IndexOf(key);
  for (size_t tries = 0; tries <= mask_; ++tries, i = (i + 1) & mask_) {
    const uintptr_t k = slots_[i].key.load(std::memory_order_acquire);
    if (k == key) return slots_[i].value.load(std::memory_order_acquire);
    if (k == 0) return nullptr;
  }
  return nullptr;
}

}  // namespace ncclscope::plugin
