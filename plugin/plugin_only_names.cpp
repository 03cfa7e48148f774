#include "plugin/plugin_only_names.h"

#include <nccl.h>

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

}  // namespace

trace::OpType OpOfFunc(const char* func) noexcept {
  return Lookup(kFuncs, func, trace::OpType::kUnknown);
}

int32_t DtypeOfName(const char* name) noexcept {
  return Lookup(kTypes, name, int32_t{-1});
}

bool IsRooted(trace::OpType op) noexcept {
  return op == trace::OpType::kBroadcast || op == trace::OpType::kReduce ||
         op == trace::OpType::kGather || op == trace::OpType::kScatter;
}

}  // namespace ncclscope::plugin::plugin_only
