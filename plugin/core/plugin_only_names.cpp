#include "plugin/core/plugin_only_names.h"

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <cstring>

namespace ncclscope::plugin::plugin_only {
namespace {

template <typename T>
struct Named {
  const char* name;
  T value;
};

constexpr Named<trace::OpType> kFuncs[] = {
    {"AllReduce", trace::OpType::kAllReduce},
    {"Broadcast", trace::OpType::kBroadcast},
    {"Reduce", trace::OpType::kReduce},
    {"AllGather", trace::OpType::kAllGather},
    {"ReduceScatter", trace::OpType::kReduceScatter},
    {"AlltoAll", trace::OpType::kAlltoAll},
    {"Gather", trace::OpType::kGather},
    {"Scatter", trace::OpType::kScatter},
    {"Send", trace::OpType::kSend},
    {"Recv", trace::OpType::kRecv},
};

constexpr Named<int32_t> kTypes[] = {
    {"ncclInt8", ncclInt8},
    {"ncclUint8", ncclUint8},
    {"ncclInt32", ncclInt32},
    {"ncclUint32", ncclUint32},
    {"ncclInt64", ncclInt64},
    {"ncclUint64", ncclUint64},
    {"ncclFloat16", ncclFloat16},
    {"ncclFloat32", ncclFloat32},
    {"ncclFloat64", ncclFloat64},
    {"ncclBfloat16", ncclBfloat16},
    {"ncclFloat8e4m3", ncclFloat8e4m3},
    {"ncclFloat8e5m2", ncclFloat8e5m2},
};

template <typename T, size_t N>
T Lookup(const Named<T> (&table)[N], const char* name, T none) noexcept {
  if (name == nullptr) return none;
  for (const Named<T>& n : table) {
    if (std::strcmp(n.name, name) == 0) return n.value;
  }
  return none;
}

// NCCL's names are string literals (ncclFuncToString, ncclDatatypeToString return constants), so
// every event of one kind carries the same pointer: a few pointers seen map straight to their
// value instead of up to a dozen string compares per event. One word per slot (the pointer above,
// value + 1 in the low 16 bits: user-space pointers fit in 47 bits), so a reader never sees a
// pointer with another's value; a slot two names share is merely looked up again.
class NameCache {
 public:
  template <typename T, size_t N>
  T Find(const Named<T> (&table)[N], const char* name, T none) noexcept {
    const auto ptr = reinterpret_cast<uintptr_t>(name);
    std::atomic<uint64_t>& slot = slots_[(ptr >> 3) % kSlots];
    const uint64_t cached = slot.load(std::memory_order_relaxed);
    if (cached != 0 && cached >> 16 == ptr) return static_cast<T>((cached & 0xffff) - 1);
    const T value = Lookup(table, name, none);
    const auto code = static_cast<uint64_t>(static_cast<int64_t>(value) + 1);
    if (ptr != 0 && ptr >> 47 == 0 && code <= 0xffff) slot.store(ptr << 16 | code, kRelaxed);
    return value;
  }

 private:
  static constexpr auto kRelaxed = std::memory_order_relaxed;
  static constexpr size_t kSlots = 8;
  std::atomic<uint64_t> slots_[kSlots] = {};
};

NameCache g_func_names;
NameCache g_type_names;

}  // namespace

trace::OpType OpOfFunc(const char* func) noexcept {
  return g_func_names.Find(kFuncs, func, trace::OpType::kUnknown);
}

int32_t DtypeOfName(const char* name) noexcept {
  return g_type_names.Find(kTypes, name, int32_t{-1});
}

bool IsRooted(trace::OpType op) noexcept {
  return op == trace::OpType::kBroadcast || op == trace::OpType::kReduce ||
         op == trace::OpType::kGather || op == trace::OpType::kScatter;
}

}  // namespace ncclscope::plugin::plugin_only
