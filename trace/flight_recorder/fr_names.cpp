#include "trace/flight_recorder/fr_names.h"

#include <array>
#include <charconv>

namespace ncclscope::flight_recorder {
namespace {

using trace::OpType;

struct NamedOp {
  std::string_view name;
  OpType op;
};

// The operation names torch records, without the backend prefix. The set is the one torch's own
// analyzer accepts (torch/distributed/flight_recorder/components/types.py, COLLECTIVES and P2P);
// the names ProcessGroupNCCL writes are its profilingTitle arguments
// (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: allreduce "nccl:all_reduce",
// allreduce_coalesced "nccl:allreduce_coalesced", barrier's allreduce_impl
// "nccl:all_reduce_barrier", broadcast, _broadcast_oop, reduce, _reduce_oop, allgather
// "nccl:all_gather", _allgather_base "nccl:_all_gather_base", allgather_into_tensor_coalesced,
// reduce_scatter, _reduce_scatter_base, reduce_scatter_tensor_coalesced, alltoall(_base)
// "nccl:all_to_all", gather, scatter). The *_single and *_v names come from the other backends
// and the functional collectives; they name the same NCCL operation.
constexpr std::array<NamedOp, 24> kCollectives = {{
    {"all_reduce", OpType::kAllReduce},
    {"allreduce_coalesced", OpType::kAllReduce},
    {"all_reduce_barrier", OpType::kAllReduce},
    {"barrier", OpType::kAllReduce},
    {"broadcast", OpType::kBroadcast},
    {"_broadcast_oop", OpType::kBroadcast},
    {"reduce", OpType::kReduce},
    {"_reduce_oop", OpType::kReduce},
    {"all_gather", OpType::kAllGather},
    {"_all_gather_base", OpType::kAllGather},
    {"all_gather_into_tensor_coalesced", OpType::kAllGather},
    {"all_gather_single", OpType::kAllGather},
    {"all_gather_v", OpType::kAllGather},
    {"reduce_scatter", OpType::kReduceScatter},
    {"_reduce_scatter_base", OpType::kReduceScatter},
    {"reduce_scatter_tensor_coalesced", OpType::kReduceScatter},
    {"reduce_scatter_single", OpType::kReduceScatter},
    {"reduce_scatter_v", OpType::kReduceScatter},
    {"all_to_all", OpType::kAlltoAll},
    {"all_to_all_single", OpType::kAlltoAll},
    {"all_to_all_v_single", OpType::kAlltoAll},
    {"gather", OpType::kGather},
    {"scatter", OpType::kScatter},
    // torch's analyzer also knows "split" and "new_window": not operations of ours (kUnknown).
    {"_allgather_base", OpType::kAllGather},  // the C++ method's name, seen in older notes
}};

// The OpType names of c10d's opTypeToString (torch/csrc/distributed/c10d/Types.hpp), which
// endCoalescing(optype) puts before "_coalesced" ("nccl:ALLGATHER_coalesced",
// "nccl:REDUCE_SCATTER_coalesced": types.py lists both).
constexpr std::array<NamedOp, 11> kUpperOpTypes = {{
    {"ALLREDUCE", OpType::kAllReduce},
    {"ALLREDUCE_COALESCED", OpType::kAllReduce},
    {"BROADCAST", OpType::kBroadcast},
    {"REDUCE", OpType::kReduce},
    {"ALLGATHER", OpType::kAllGather},
    {"_ALLGATHER_BASE", OpType::kAllGather},
    {"REDUCE_SCATTER", OpType::kReduceScatter},
    {"_REDUCE_SCATTER_BASE", OpType::kReduceScatter},
    {"ALLTOALL", OpType::kAlltoAll},
    {"ALLTOALL_BASE", OpType::kAlltoAll},
    {"GATHER", OpType::kGather},
}};

bool IsUpperName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= 'A' && c <= 'Z') || c == '_' || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

bool ParseInt(std::string_view s, int* out) {
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && *out >= 0;
}

// "A->B" (send) or "B<-A" (recv): the two ranks around `arrow`, the first one being this rank.
void ParsePair(std::string_view meta, std::string_view arrow, FrOpName* out) {
  const size_t at = meta.find(arrow);
  if (at == std::string_view::npos) return;
  int first = -1;
  int second = -1;
  if (!ParseInt(meta.substr(0, at), &first) || !ParseInt(meta.substr(at + arrow.size()), &second)) {
    return;
  }
  out->self = first;
  out->peer = second;
}

struct DtypeName {
  int32_t nccl;
  std::string_view torch;
};

// ncclDataType_t values (nccl.h: ncclInt8 0 ... ncclFloat8e5m2 11) and the c10 ScalarType names
// torch writes for them (c10/core/ScalarType.h, AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS;
// ProcessGroupNCCL.cpp's ncclDataType map pairs kChar/Int8, kByte/Uint8, kInt/Int32, kLong/Int64,
// kHalf/Float16, kFloat/Float32, kDouble/Float64, kBFloat16/Bfloat16, kBool/Uint8). UInt32,
// UInt64 and the two float8 types are paired by meaning: torch's map of them differs by version.
constexpr std::array<DtypeName, 12> kDtypes = {{
    {0, "Char"},
    {1, "Byte"},
    {2, "Int"},
    {3, "UInt32"},
    {4, "Long"},
    {5, "UInt64"},
    {6, "Half"},
    {7, "Float"},
    {8, "Double"},
    {9, "BFloat16"},
    {10, "Float8_e4m3fn"},
    {11, "Float8_e5m2"},
}};

}  // namespace

FrOpName ParseProfilingName(std::string_view name) {
  FrOpName out;
  // torch's analyzer splits at ':' into backend and name (types.py, Op.__init__).
  const size_t colon = name.find(':');
  if (colon != std::string_view::npos) name.remove_prefix(colon + 1);
  const size_t space = name.find(' ');
  const std::string_view type = name.substr(0, space);
  const std::string_view meta =
      space == std::string_view::npos ? std::string_view() : name.substr(space + 1);

  if (type == "send") {
    out.op = OpType::kSend;
    ParsePair(meta, "->", &out);
    return out;
  }
  if (type == "recv") {
    out.op = OpType::kRecv;
    ParsePair(meta, "<-", &out);
    return out;
  }
  if (type == "coalesced") {
    out.closes_coalesced = true;
    return out;
  }
  for (const NamedOp& n : kCollectives) {
    if (n.name == type) {
      out.op = n.op;
      return out;
    }
  }
  constexpr std::string_view kSuffix = "_coalesced";
  if (type.size() > kSuffix.size() && type.ends_with(kSuffix)) {
    const std::string_view upper = type.substr(0, type.size() - kSuffix.size());
    if (IsUpperName(upper)) {
      out.closes_coalesced = true;
      for (const NamedOp& n : kUpperOpTypes) {
        if (n.name == upper) out.op = n.op;
      }
    }
  }
  return out;
}

std::string ProfilingNameOf(trace::OpType op, int self, int peer) {
  switch (op) {
    case OpType::kAllReduce:
      return "nccl:all_reduce";
    case OpType::kBroadcast:
      return "nccl:broadcast";
    case OpType::kReduce:
      return "nccl:reduce";
    case OpType::kAllGather:
      return "nccl:all_gather";
    case OpType::kReduceScatter:
      return "nccl:reduce_scatter";
    case OpType::kAlltoAll:
      return "nccl:all_to_all";
    case OpType::kGather:
      return "nccl:gather";
    case OpType::kScatter:
      return "nccl:scatter";
    // ProcessGroupNCCL::send and ::recv: c10::str("nccl:send ", rank_, "->", dstRank) and
    // c10::str("nccl:recv ", rank_, "<-", srcRank), rank_ being the group-local rank.
    case OpType::kSend:
      return "nccl:send " + std::to_string(self) + "->" + std::to_string(peer);
    case OpType::kRecv:
      return "nccl:recv " + std::to_string(self) + "<-" + std::to_string(peer);
    default:
      return "";
  }
}

int32_t NcclDtypeOfTorchName(std::string_view name) {
  // ProcessGroupNCCL sends bool tensors as ncclUint8 (its ncclDataType map: kBool -> ncclUint8).
  if (name == "Bool") return 1;
  for (const DtypeName& d : kDtypes) {
    if (d.torch == name) return d.nccl;
  }
  return -1;
}

const char* TorchNameOfNcclDtype(int32_t nccl_dtype) {
  for (const DtypeName& d : kDtypes) {
    if (d.nccl == nccl_dtype) return d.torch.data();
  }
  return "";
}

}  // namespace ncclscope::flight_recorder
