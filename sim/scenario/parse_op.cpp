// One op of a step: {"op": "allreduce", "comm": "tp", "count": 1024, "dtype": "float32", ...}.
#include <fmt/format.h>

#include <utility>

#include "sim/scenario/names.h"
#include "sim/scenario/scenario_parser.h"

namespace ncclscope::sim {
namespace {

// Keeps buffers of a many-rank run on a 2-core machine bounded; scenarios are about behavior.
constexpr int64_t kMaxCount = int64_t{1} << 28;

// More than any bucketed gradient sync issues in one group, few enough to stay a scenario.
constexpr size_t kMaxCoalesced = 64;

OpKind parseKind(const JsonNode& node) {
  const JsonNode kind = node.at("op");
  const std::string kind_name = kind.asString();
  const auto parsed = parseOpKind(kind_name);
  if (!parsed)
    kind.fail(fmt::format("unknown op '{}' (expected one of: {})", kind_name, opKindChoices()));
  return *parsed;
}

// {"op": "coalesced", "comm": "dp", "ops": [...]}: collectives of one communicator in one group.
OpSpec parseCoalesced(const JsonNode& node) {
  node.expectObject({"op", "comm", "ops"});
  OpSpec op;
  op.kind = OpKind::kCoalesced;
  if (node.has("comm")) op.comm = node.at("comm").asString();
  const JsonNode list = node.at("ops");
  const size_t n = list.arraySize();
  if (n == 0 || n > kMaxCoalesced) {
    list.fail(fmt::format("a coalesced op holds 1 to {} collectives, got {}", kMaxCoalesced, n));
  }
  for (size_t i = 0; i < n; ++i) {
    const JsonNode inner = list.at(i);
    inner.keys();  // a non-object fails here, naming its type
    const OpKind kind = parseKind(inner);
    if (!opIsCollective(kind)) {
      inner.at("op").fail(
          fmt::format("a coalesced op holds collectives (allreduce, broadcast, reduce, allgather, "
                      "reducescatter, alltoall, gather, scatter), not {}",
                      opKindName(kind)));
    }
    OpSpec spec = parseOp(inner);
    // One group is one communicator's: ProcessGroupNCCL coalesces the calls of one process group.
    if (inner.has("comm") && spec.comm != op.comm) {
      inner.at("comm").fail(fmt::format(
          "'{}' is not the coalesced op's communicator '{}' (one group, one communicator)",
          spec.comm, op.comm));
    }
    if (spec.captured) {
      inner.at("captured")
          .fail(
              "'captured' does not apply inside a coalesced op (its calls launch "
              "at the group's end)");
    }
    spec.comm = op.comm;
    op.ops.push_back(std::move(spec));
  }
  return op;
}

}  // namespace

OpSpec parseOp(const JsonNode& node) {
  node.keys();  // a non-object fails here, naming its type
  if (node.has("op") && parseKind(node) == OpKind::kCoalesced) return parseCoalesced(node);
  if (node.has("ops")) node.at("ops").fail("'ops' only applies to op coalesced");
  node.expectObject({"op", "comm", "count", "bytes", "dtype", "redop", "scalar", "root",
                     "direction", "grouped", "in_place", "counts", "captured"});
  OpSpec op;
  const std::string kind_name = node.at("op").asString();
  op.kind = parseKind(node);
  if (node.has("comm")) op.comm = node.at("comm").asString();

  if (node.has("dtype")) {
    const JsonNode d = node.at("dtype");
    const std::string name = d.asString();
    const auto dtype = parseDtype(name);
    if (!dtype) {
      d.fail(
          fmt::format("unknown dtype '{}' (expected an NCCL name such as ncclFloat32, "
                      "float16, bfloat16, int8, uint64, float8e4m3)",
                      name));
    }
    op.dtype = *dtype;
  }

  if (node.has("count") == node.has("bytes")) {
    node.fail("give the size as exactly one of 'count' (elements) or 'bytes'");
  }
  if (node.has("count")) {
    op.count = static_cast<size_t>(node.at("count").asInt(0, kMaxCount));
  } else {
    const JsonNode b = node.at("bytes");
    const auto bytes = static_cast<size_t>(b.asInt(0, kMaxCount));
    if (bytes % dtypeSize(op.dtype) != 0) {
      b.fail(fmt::format("{} bytes is not a whole number of {} elements ({} bytes each)", bytes,
                         dtypeName(op.dtype), dtypeSize(op.dtype)));
    }
    op.count = bytes / dtypeSize(op.dtype);
  }

  if (node.has("redop")) {
    const JsonNode r = node.at("redop");
    if (!opReduces(op.kind)) r.fail(fmt::format("{} does not reduce", kind_name));
    const std::string name = r.asString();
    const auto redop = parseRedOp(name);
    if (!redop)
      r.fail(fmt::format("unknown redop '{}' (expected one of: {})", name, redOpChoices()));
    op.redop = *redop;
  }
  if (node.has("scalar")) {
    const JsonNode sc = node.at("scalar");
    if (op.redop != RedOp::kPreMulSum) sc.fail("'scalar' only applies to redop premulsum");
    op.premul_scalar = sc.asNumber(-1e6, 1e6);
  }
  if (node.has("root")) {
    const JsonNode r = node.at("root");
    if (!opHasRoot(op.kind)) r.fail(fmt::format("{} has no root", kind_name));
    op.root = static_cast<int>(r.asInt(0, 1 << 20));
  }
  if (node.has("direction") || node.has("grouped")) {
    if (op.kind != OpKind::kPipeline) {
      node.fail("'direction' and 'grouped' only apply to op pipeline");
    }
  }
  if (node.has("direction")) {
    const JsonNode d = node.at("direction");
    const std::string dir = d.asString();
    if (dir == "forward") {
      op.direction = PipeDirection::kForward;
    } else if (dir == "backward") {
      op.direction = PipeDirection::kBackward;
    } else if (dir == "exchange") {
      op.direction = PipeDirection::kExchange;
    } else {
      d.fail(fmt::format("unknown direction '{}' (expected forward, backward or exchange)", dir));
    }
  }
  if (node.has("grouped")) op.grouped = node.at("grouped").asBool();
  if (node.has("in_place")) {
    const JsonNode ip = node.at("in_place");
    if (op.kind != OpKind::kAllToAll && op.kind != OpKind::kGather && op.kind != OpKind::kScatter) {
      ip.fail(fmt::format("'in_place' only applies to alltoall, gather and scatter, not {}",
                          kind_name));
    }
    op.in_place = ip.asBool();
  }
  if (node.has("captured")) op.captured = node.at("captured").asBool();
  if (node.has("counts")) {
    const JsonNode c = node.at("counts");
    if (op.kind != OpKind::kAllToAllV) {
      c.fail(fmt::format("'counts' only applies to alltoallv, not {}", kind_name));
    }
    const std::string split = c.asString();
    if (split == "equal") {
      op.equal_counts = true;
    } else if (split != "uneven") {
      c.fail(fmt::format("unknown counts '{}' (expected uneven or equal)", split));
    }
  }
  return op;
}

}  // namespace ncclscope::sim
