#include "trace/flight_recorder/fr_dump.h"

namespace ncclscope::flight_recorder {

namespace {

bool ParseSmallNumber(std::string_view digits, int* out) {
  if (digits.empty() || digits.size() > 6) return false;
  int v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::optional<FrVersion> ParseFrVersion(std::string_view text) {
  const size_t dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  FrVersion v;
  if (!ParseSmallNumber(text.substr(0, dot), &v.major) ||
      !ParseSmallNumber(text.substr(dot + 1), &v.minor)) {
    return std::nullopt;
  }
  return v;
}

const char* FrStateName(FrState state) {
  switch (state) {
    case FrState::kScheduled:
      return "scheduled";
    case FrState::kStarted:
      return "started";
    case FrState::kCompleted:
      return "completed";
  }
  return "?";
}

}  // namespace ncclscope::flight_recorder
