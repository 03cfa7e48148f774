// Which NVTX range names mark a training step, and the step number they carry.
//
// A pattern is one or more alternatives separated by ';'; each alternative has exactly one "%d",
// where the step number (decimal digits) stands: "step %d;Step %d;iteration %d". A range name
// matches an alternative when it starts with the text before %d, continues with at least one digit
// and, right after the digits, with the text after %d (anything may follow that). The first
// alternative that matches gives the step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ncclscope::plugin {

inline constexpr size_t kStepAlternatives = 8;
inline constexpr size_t kStepAffixChars = 31;

// The parsed pattern: fixed-size, so matching on the NVTX hot path reads no heap.
struct StepPattern {
  struct Alternative {
    char prefix[kStepAffixChars + 1];
    char suffix[kStepAffixChars + 1];
    uint8_t prefix_len;
    uint8_t suffix_len;
  };
  Alternative alt[kStepAlternatives];
  uint32_t count;
};

// The default: "step %d;Step %d;STEP %d;iteration %d;Iteration %d;iter %d".
extern const char* const kDefaultStepPattern;

// Parses text into *out. On a bad pattern (empty, an alternative without %d or with two, text
// around %d longer than 31 characters, more than 8 alternatives, a digit right next to %d) returns
// false, leaves *out unchanged and says what is wrong in *error, naming the alternative.
// Thread-safe.
bool ParseStepPattern(const std::string& text, StepPattern* out, std::string* error);

// The step number name[0..len) carries under pattern p, if it matches one alternative. Numbers
// past 2^63 do not match. Hot path: no allocation, no system call. Thread-safe.
bool MatchStep(const StepPattern& p, const char* name, size_t len, uint64_t* step) noexcept;

}  // namespace ncclscope::plugin
