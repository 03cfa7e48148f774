#include "trace/size_text.h"

namespace ncclscope::trace {

bool ParseSizeText(std::string_view text, uint64_t* out) noexcept {
  size_t i = 0;
  uint64_t v = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const auto digit = static_cast<uint64_t>(text[i] - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  if (i == 0) return false;
  unsigned shift = 0;
  if (i < text.size()) {
    switch (text[i]) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
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

}  // namespace ncclscope::trace
