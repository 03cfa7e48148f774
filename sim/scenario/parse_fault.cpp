// One fault: {"kind": "hang", "ranks": [3], "step": 2, "op": 0, ...}. Which keys a fault takes
// depends on its kind; unknown keys are errors so a misspelt option never silently defaults.
#include <fmt/format.h>

#include <limits>
#include <string_view>
#include <vector>

#include "sim/scenario/names.h"
#include "sim/scenario/scenario_parser.h"

namespace ncclscope::sim {
namespace {

constexpr int64_t kMaxStep = 1 << 30;

std::vector<int> parseRanks(const JsonNode& node) {
  const JsonNode list = node.at("ranks");
  if (list.arraySize() == 0) list.fail("needs at least one rank");
  std::vector<int> ranks;
  for (size_t i = 0; i < list.arraySize(); ++i) {
    ranks.push_back(static_cast<int>(list.at(i).asInt(-(1 << 20), 1 << 20)));
  }
  return ranks;
}

// Keys each kind accepts besides kind, ranks, comment.
std::vector<std::string_view> keysFor(FaultKind kind) {
  switch (kind) {
    case FaultKind::kHang:
    case FaultKind::kStuckBefore:
    case FaultKind::kSkip:
      return {"step", "op"};
    case FaultKind::kExtraOp:
      return {"step", "op", "extra"};
    case FaultKind::kWrongCount:
      return {"step", "op", "count"};
    case FaultKind::kWrongDtype:
      return {"step", "op", "dtype"};
    case FaultKind::kWrongOp:
      return {"step", "op", "as_op"};
    case FaultKind::kWrongRedop:
      return {"step", "op", "redop"};
    case FaultKind::kWrongRoot:
      return {"step", "op", "root"};
    case FaultKind::kWrongPeer:
      return {"step", "op", "peer_shift"};
    case FaultKind::kSendFirst:
      return {"step", "op"};
    case FaultKind::kComputeSlowdown:
      return {"step", "until_step", "extra_ms", "factor"};
    case FaultKind::kSlowLink:
      return {"step", "until_step", "factor"};
    case FaultKind::kHungLink:
      // No until_step: what was sent while hung stays lost, so the job never gets past it.
      return {"step"};
    case FaultKind::kCrash:
      return {"step", "op", "mode"};
    case FaultKind::kFreeze:
    case FaultKind::kEarlyExit:
      return {"step", "op"};
    case FaultKind::kNeverJoin:
      return {"comm", "after_ms"};
    case FaultKind::kIpcOpenFails:
      // From the rank's start: the accelerated collectives' set-up maps the peers' memory at a
      // communicator's first routed call, whenever that comes.
      return {};
    case FaultKind::kDeviceMemoryLimit:
      return {"bytes"};
    case FaultKind::kNanInput:
      return {"step", "op", "value", "index", "spread"};
    case FaultKind::kFlipOutput:
      return {"step", "op", "bit", "every"};
  }
  return {};
}

bool opRequired(FaultKind kind) {
  return kind != FaultKind::kComputeSlowdown && kind != FaultKind::kSlowLink &&
         kind != FaultKind::kHungLink && kind != FaultKind::kCrash && kind != FaultKind::kFreeze &&
         kind != FaultKind::kEarlyExit && kind != FaultKind::kNeverJoin &&
         kind != FaultKind::kIpcOpenFails && kind != FaultKind::kDeviceMemoryLimit;
}

// Faults that hold for the rank's whole life: no step.
bool stepless(FaultKind kind) {
  return kind == FaultKind::kNeverJoin || kind == FaultKind::kIpcOpenFails ||
         kind == FaultKind::kDeviceMemoryLimit;
}

template <typename T, typename Parse>
T parseName(const JsonNode& node, Parse parse, std::string_view what, const std::string& choices) {
  const std::string name = node.asString();
  const auto v = parse(name);
  if (!v) node.fail(fmt::format("unknown {} '{}' (expected one of: {})", what, name, choices));
  return *v;
}

// nan_input's value: what a diverging computation leaves in a tensor.
double parseNanValue(const JsonNode& node) {
  const std::string v = node.asString();
  if (v == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (v == "inf") return std::numeric_limits<double>::infinity();
  if (v == "-inf") return -std::numeric_limits<double>::infinity();
  node.fail(fmt::format("unknown value '{}' (expected one of: nan, inf, -inf)", v));
}

void parseKindOptions(const JsonNode& node, FaultSpec& f) {
  switch (f.kind) {
    case FaultKind::kExtraOp:
      if (node.has("extra")) f.extra = parseOp(node.at("extra"));
      break;
    case FaultKind::kWrongCount:
      if (node.has("count")) f.count = static_cast<size_t>(node.at("count").asInt(0, 1 << 28));
      break;
    case FaultKind::kWrongDtype:
      if (node.has("dtype")) {
        f.dtype = parseName<ncclDataType_t>(node.at("dtype"), parseDtype, "dtype",
                                            "ncclInt8 .. ncclFloat8e5m2, or float32, half, ...");
      }
      break;
    case FaultKind::kWrongOp:
      if (node.has("as_op")) {
        f.as_op = parseName<OpKind>(node.at("as_op"), parseOpKind, "op", opKindChoices());
      }
      break;
    case FaultKind::kWrongRedop:
      if (node.has("redop")) {
        f.redop = parseName<RedOp>(node.at("redop"), parseRedOp, "redop", redOpChoices());
      }
      break;
    case FaultKind::kWrongRoot:
      if (node.has("root")) f.root = static_cast<int>(node.at("root").asInt(0, 1 << 20));
      break;
    case FaultKind::kWrongPeer:
      if (node.has("peer_shift")) {
        f.peer_shift = static_cast<int>(node.at("peer_shift").asInt(-(1 << 20), 1 << 20));
        if (f.peer_shift == 0) node.at("peer_shift").fail("0 would send to the right peer");
      }
      break;
    case FaultKind::kComputeSlowdown:
      if (node.has("extra_ms") == node.has("factor")) {
        node.fail("compute_slowdown needs exactly one of 'extra_ms' or 'factor'");
      }
      if (node.has("extra_ms")) f.extra_ms = node.at("extra_ms").asNumber(0, 3.6e6);
      if (node.has("factor")) f.factor = node.at("factor").asNumber(0, 1e6);
      break;
    case FaultKind::kSlowLink:
      f.factor = node.at("factor").asNumber(1e-3, 1e6);
      break;
    case FaultKind::kCrash:
      if (node.has("mode")) {
        f.crash_mode = parseName<CrashMode>(node.at("mode"), parseCrashMode, "crash mode",
                                            "sigkill, abort, segfault");
      }
      break;
    case FaultKind::kNeverJoin:
      f.comm = node.at("comm").asString();
      // A slow start-up: the rank joins, only late.
      if (node.has("after_ms")) f.join_after_ms = node.at("after_ms").asNumber(0, 3.6e6);
      break;
    case FaultKind::kDeviceMemoryLimit:
      f.memory_bytes = static_cast<size_t>(node.at("bytes").asInt(1, INT64_MAX));
      break;
    case FaultKind::kNanInput:
      if (node.has("value")) f.nan_value = parseNanValue(node.at("value"));
      if (node.has("index")) f.index = static_cast<size_t>(node.at("index").asInt(0, 1 << 28));
      if (node.has("spread")) f.spread = node.at("spread").asBool();
      break;
    case FaultKind::kFlipOutput:
      if (node.has("bit")) f.bit = static_cast<uint64_t>(node.at("bit").asInt(0, INT64_MAX));
      if (node.has("every")) f.every = static_cast<int>(node.at("every").asInt(1, 1 << 20));
      break;
    default:
      break;
  }
}

}  // namespace

FaultSpec parseFault(const JsonNode& node) {
  node.keys();  // a non-object fails here, naming its type
  const JsonNode kind = node.at("kind");
  FaultSpec f;
  f.kind = parseName<FaultKind>(kind, parseFaultKind, "fault kind", faultKindChoices());

  std::vector<std::string_view> allowed{"kind", "ranks"};
  for (std::string_view k : keysFor(f.kind)) allowed.push_back(k);
  for (const std::string& key : node.keys()) {
    bool ok = key == "comment";
    for (std::string_view a : allowed) ok = ok || a == key;
    if (!ok) {
      std::string list;
      for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      node.at(key).fail(
          fmt::format("unknown key for a {} fault (allowed: {})", faultKindName(f.kind), list));
    }
  }

  f.ranks = parseRanks(node);
  if (!stepless(f.kind)) f.step = static_cast<int>(node.at("step").asInt(0, kMaxStep));
  if (node.has("op")) {
    f.op = static_cast<int>(node.at("op").asInt(0, 1 << 20));
  } else if (opRequired(f.kind)) {
    node.at("op");  // throws "required key is missing" at faults[i].op
  }
  if (node.has("until_step")) {
    const JsonNode u = node.at("until_step");
    f.until_step = static_cast<int>(u.asInt(0, kMaxStep));
    if (f.until_step < f.step) u.fail(fmt::format("ends before it starts (step {})", f.step));
  }
  parseKindOptions(node, f);
  return f;
}

}  // namespace ncclscope::sim
