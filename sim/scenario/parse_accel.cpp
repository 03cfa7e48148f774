// The top-level "accel" key: {"enabled": true, "buffer": "1m", "timeout_ms": 5000}, the settings
// of NCCLSCOPE_ACCEL the launcher gives every rank (docs/scenarios.md). Values are checked here,
// against the probe's own ranges, so a bad one stops `ncclscope sim` before any rank starts
// instead of being warned about and replaced by a default in every rank.
#include <fmt/format.h>

#include "sim/scenario/accel_limits.h"
#include "sim/scenario/scenario_parser.h"
#include "trace/size_text.h"

namespace ncclscope::sim {
namespace {

uint64_t parseBuffer(const JsonNode& node) {
  uint64_t bytes = 0;
  if (node.isString()) {
    const std::string text = node.asString();
    if (!trace::ParseSizeText(text, &bytes)) {
      node.fail(fmt::format("'{}' is not a size (bytes, or a whole number with k, m or g: \"16m\")",
                            text));
    }
  } else {
    bytes = static_cast<uint64_t>(node.asInt(0, INT64_MAX));
  }
  if (bytes < kAccelBufferMin || bytes > kAccelBufferMax) {
    node.fail(fmt::format("{} bytes is out of range [{}, {}] (NCCLSCOPE_ACCEL_BUFFER's)", bytes,
                          kAccelBufferMin, kAccelBufferMax));
  }
  return bytes;
}

}  // namespace

AccelSpec parseAccel(const JsonNode& node) {
  node.expectObject({"enabled", "buffer", "timeout_ms"});
  AccelSpec a;
  if (node.has("enabled")) a.enabled = node.at("enabled").asBool();
  if (node.has("buffer")) a.buffer_bytes = parseBuffer(node.at("buffer"));
  if (node.has("timeout_ms")) {
    a.timeout_ms = node.at("timeout_ms").asInt(kAccelTimeoutMsMin, kAccelTimeoutMsMax);
  }
  return a;
}

}  // namespace ncclscope::sim
