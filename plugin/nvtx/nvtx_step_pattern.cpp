#include "plugin/nvtx/nvtx_step_pattern.h"

#include <cstring>

namespace ncclscope::plugin {

const char* const kDefaultStepPattern = "step %d;Step %d;STEP %d;iteration %d;Iteration %d;iter %d";

namespace {

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// One alternative; `where` names it in errors ("alternative 2 'foo'").
bool ParseAlternative(const std::string& alt, StepPattern::Alternative* out,
                      const std::string& where, std::string* error) {
  const size_t mark = alt.find("%d");
  if (mark == std::string::npos) {
    *error = where + " has no %d where the step number stands";
    return false;
  }
  if (alt.find("%d", mark + 2) != std::string::npos) {
    *error = where + " has more than one %d";
    return false;
  }
  const std::string prefix = alt.substr(0, mark);
  const std::string suffix = alt.substr(mark + 2);
  if (prefix.size() > kStepAffixChars || suffix.size() > kStepAffixChars) {
    *error = where + " has more than 31 characters before or after %d";
    return false;
  }
  // "step1%d" would never be told apart from step 1x: the digits must be the number's own.
  if ((!prefix.empty() && IsDigit(prefix.back())) || (!suffix.empty() && IsDigit(suffix[0]))) {
    *error = where + " has a digit right next to %d";
    return false;
  }
  *out = StepPattern::Alternative{};
  std::memcpy(out->prefix, prefix.data(), prefix.size());
  std::memcpy(out->suffix, suffix.data(), suffix.size());
  out->prefix_len = static_cast<uint8_t>(prefix.size());
  out->suffix_len = static_cast<uint8_t>(suffix.size());
  return true;
}

}  // namespace

bool ParseStepPattern(const std::string& text, StepPattern* out, std::string* error) {
  if (text.empty()) {
    *error = "the pattern is empty";
    return false;
  }
  StepPattern parsed{};
  size_t start = 0;
  for (;;) {
    const size_t bar = text.find(';', start);
    const std::string alt = text.substr(start, bar == std::string::npos ? bar : bar - start);
    if (parsed.count == kStepAlternatives) {
      *error = "the pattern has more than 8 alternatives";
      return false;
    }
    const std::string where =
        "alternative " + std::to_string(parsed.count + 1) + " '" + alt.substr(0, 40) + "'";
    if (!ParseAlternative(alt, &parsed.alt[parsed.count], where, error)) return false;
    ++parsed.count;
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  *out = parsed;
  return true;
}

bool MatchStep(const StepPattern& p, const char* name, size_t len, uint64_t* step) noexcept {
  for (uint32_t i = 0; i < p.count; ++i) {
    const StepPattern::Alternative& a = p.alt[i];
    // Most range names are no step: the first character rejects them without a call.
    if (len < a.prefix_len + 1u || (a.prefix_len != 0 && name[0] != a.prefix[0]) ||
        std::memcmp(name, a.prefix, a.prefix_len) != 0) {
      continue;
    }
    size_t pos = a.prefix_len;
    uint64_t value = 0;
    bool overflow = false;
    while (pos < len && IsDigit(name[pos])) {
      const uint64_t digit = static_cast<uint64_t>(name[pos] - '0');
      if (value > (INT64_MAX - digit) / 10) overflow = true;
      value = value * 10 + digit;
      ++pos;
    }
    if (pos == a.prefix_len || overflow) continue;
    if (len - pos < a.suffix_len || std::memcmp(name + pos, a.suffix, a.suffix_len) != 0) continue;
    *step = value;
    return true;
  }
  return false;
}

}  // namespace ncclscope::plugin
