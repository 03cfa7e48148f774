// The top-level "accel" key: {"enabled": true, "buffer": "1m", "timeout_ms": 5000}, the settings
// of NCCLSCOPE_ACCEL the launcher gives every rank (docs/scenarios.md). Values are checked here,
// against the probe's own ranges, so a bad one stops `ncclscope sim` before any rank starts
// instead of being warned about and replaced by a default in every rank.
#include <fmt/format.h>

#include <cctype>
#include <cstdlib>

#include "sim/scenario/accel_limits.h"
#include "sim/scenario/scenario_parser.h"

namespace ncclscope::sim {
namespace {

// "1048576", "1024k", "1m", "1g" (the probe's size syntax: digits, then k, m or g, binary); false
// for anything else or a value past 2^64.
bool parseSizeText(const std::string& text, uint64_t* out) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  size_t i = 0;
  uint64_t v = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  unsigned shift = 0;
  if (i < text.size()) {
    switch (std::tolower(static_cast<unsigned char>(text[i]))) {
      case 'k':
        shift = 10;
        break;
      case 'm':
        shift = 20;
        break;
      case 'g':
        shift = 30;
        break;
      default:
        return false;
    }
    if (i + 1 != text.size()) return false;
  }
  if (shift != 0 && v > (UINT64_MAX >> shift)) return false;
  *out = v << shift;
  return true;
}

uint64_t parseBuffer(const JsonNode& node) {
  uint64_t bytes = 0;
  if (node.isString()) {
    const std::string text = node.asString();
    if (!parseSizeText(text, &bytes)) {
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
