#include "sim/scenario/names.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "trace/nccl_names.h"

namespace ncclscope::sim {
namespace {

template <typename E, size_t N>
std::optional<E> lookup(const std::array<std::pair<std::string_view, E>, N>& table,
                        std::string_view name) {
  for (const auto& [n, e] : table) {
    if (n == name) return e;
  }
  return std::nullopt;
}

template <typename E, size_t N>
std::string_view nameOf(const std::array<std::pair<std::string_view, E>, N>& table, E value) {
  for (const auto& [n, e] : table) {
    if (e == value) return n;
  }
  return "?";
}

template <typename E, size_t N>
std::string choices(const std::array<std::pair<std::string_view, E>, N>& table) {
  std::string out;
  for (const auto& [n, e] : table) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

constexpr std::array<std::pair<std::string_view, OpKind>, 11> kOps{{
    {"allreduce", OpKind::kAllReduce},
    {"broadcast", OpKind::kBroadcast},
    {"reduce", OpKind::kReduce},
    {"allgather", OpKind::kAllGather},
    {"reducescatter", OpKind::kReduceScatter},
    {"alltoall", OpKind::kAllToAll},
    {"gather", OpKind::kGather},
    {"scatter", OpKind::kScatter},
    {"pipeline", OpKind::kPipeline},
    {"alltoallv", OpKind::kAllToAllV},
    {"coalesced", OpKind::kCoalesced},
}};

// Canonical names first: dtypeName() returns the first match.
constexpr std::array<std::pair<std::string_view, ncclDataType_t>, 17> kDtypes{{
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
    {"ncclChar", ncclChar},
    {"ncclInt", ncclInt},
    {"ncclHalf", ncclHalf},
    {"ncclFloat", ncclFloat},
    {"ncclDouble", ncclDouble},
}};

constexpr std::array<std::pair<std::string_view, RedOp>, 6> kRedOps{{
    {"sum", RedOp::kSum},
    {"prod", RedOp::kProd},
    {"max", RedOp::kMax},
    {"min", RedOp::kMin},
    {"avg", RedOp::kAvg},
    {"premulsum", RedOp::kPreMulSum},
}};

constexpr std::array<std::pair<std::string_view, FaultKind>, 22> kFaults{{
    {"hang", FaultKind::kHang},
    {"stuck_before", FaultKind::kStuckBefore},
    {"skip", FaultKind::kSkip},
    {"extra_op", FaultKind::kExtraOp},
    {"wrong_count", FaultKind::kWrongCount},
    {"wrong_dtype", FaultKind::kWrongDtype},
    {"wrong_op", FaultKind::kWrongOp},
    {"wrong_redop", FaultKind::kWrongRedop},
    {"wrong_root", FaultKind::kWrongRoot},
    {"wrong_peer", FaultKind::kWrongPeer},
    {"send_first", FaultKind::kSendFirst},
    {"compute_slowdown", FaultKind::kComputeSlowdown},
    {"slow_link", FaultKind::kSlowLink},
    {"hung_link", FaultKind::kHungLink},
    {"crash", FaultKind::kCrash},
    {"freeze", FaultKind::kFreeze},
    {"early_exit", FaultKind::kEarlyExit},
    {"never_join", FaultKind::kNeverJoin},
    {"ipc_open_fails", FaultKind::kIpcOpenFails},
    {"device_memory_limit", FaultKind::kDeviceMemoryLimit},
    {"nan_input", FaultKind::kNanInput},
    {"flip_output", FaultKind::kFlipOutput},
}};

constexpr std::array<std::pair<std::string_view, CrashMode>, 3> kCrashModes{{
    {"sigkill", CrashMode::kSigkill},
    {"abort", CrashMode::kAbort},
    {"segfault", CrashMode::kSegfault},
}};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::optional<OpKind> parseOpKind(std::string_view name) {
  return lookup(kOps, name);
}
std::string_view opKindName(OpKind kind) {
  return nameOf(kOps, kind);
}
std::string opKindChoices() {
  return choices(kOps);
}

std::optional<ncclDataType_t> parseDtype(std::string_view name) {
  if (auto exact = lookup(kDtypes, name)) return exact;
  const std::string want = lower(name);
  for (const auto& [n, e] : kDtypes) {
    if (lower(n.substr(4)) == want) return e;
  }
  return std::nullopt;
}

std::string_view dtypeName(ncclDataType_t dtype) {
  return nameOf(kDtypes, dtype);
}

size_t dtypeSize(ncclDataType_t dtype) {
  return static_cast<size_t>(trace::DataTypeSize(dtype));
}

bool dtypeIsFloat(ncclDataType_t dtype) {
  return dtype == ncclFloat16 || dtype == ncclFloat32 || dtype == ncclFloat64 ||
         dtype == ncclBfloat16 || dtype == ncclFloat8e4m3 || dtype == ncclFloat8e5m2;
}

std::optional<RedOp> parseRedOp(std::string_view name) {
  return lookup(kRedOps, lower(name));
}
std::string_view redOpName(RedOp op) {
  return nameOf(kRedOps, op);
}
std::string redOpChoices() {
  return choices(kRedOps);
}

std::optional<FaultKind> parseFaultKind(std::string_view name) {
  return lookup(kFaults, name);
}
std::string_view faultKindName(FaultKind kind) {
  return nameOf(kFaults, kind);
}
std::string faultKindChoices() {
  return choices(kFaults);
}

std::optional<CrashMode> parseCrashMode(std::string_view name) {
  return lookup(kCrashModes, name);
}
std::string_view crashModeName(CrashMode mode) {
  return nameOf(kCrashModes, mode);
}

bool opHasRoot(OpKind kind) {
  return kind == OpKind::kBroadcast || kind == OpKind::kReduce || kind == OpKind::kGather ||
         kind == OpKind::kScatter;
}

bool opReduces(OpKind kind) {
  return kind == OpKind::kAllReduce || kind == OpKind::kReduce || kind == OpKind::kReduceScatter;
}

bool opIsPointToPoint(OpKind kind) {
  return kind == OpKind::kPipeline || kind == OpKind::kAllToAllV;
}

bool opIsCollective(OpKind kind) {
  return !opIsPointToPoint(kind) && kind != OpKind::kCoalesced;
}

}  // namespace ncclscope::sim
