#include "plugin/runtime/comm_map.h"

namespace ncclscope::plugin {

CommMap::CommMap(size_t capacity) {
  size_t n = 16;
  while (n < capacity) n <<= 1;
  mask_ = n - 1;
  slots_ = std::make_unique<Slot[]>(n);
}

CommState* CommMap::Insert(const void* handle, std::unique_ptr<CommState> state) {
  const auto key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  size_t i = IndexOf(key);
  for (size_t tries = 0; tries <= mask_; ++tries, i = (i + 1) & mask_) {
    const uintptr_t k = slots_[i].key.load(std::memory_order_relaxed);
    if (k != key && k != 0) continue;
    CommState* raw = state.get();
    owned_.push_back(std::move(state));
    // Value before key: a reader that sees the key also sees its state.
    slots_[i].value.store(raw, std::memory_order_release);
    if (k == 0) slots_[i].key.store(key, std::memory_order_release);
    return raw;
  }
  return nullptr;
}

void CommMap::Erase(const void* handle) {
  const auto key = reinterpret_cast<uintptr_t>(handle);
  if (key == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  size_t i = IndexOf(key);
  for (size_t tries = 0; tries <= mask_; ++tries, i = (i + 1) & mask_) {
    const uintptr_t k = slots_[i].key.load(std::memory_order_relaxed);
    if (k == key) {
      slots_[i].value.store(nullptr, std::memory_order_release);
      return;
    }
    if (k == 0) return;
  }
}

}  // namespace ncclscope::plugin
