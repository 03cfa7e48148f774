// UTF-8 validation as Python's pickle reads str payloads (decoded with 'surrogatepass', so the
// encoded surrogates U+D800..U+DFFF pass; overlong forms and values past U+10FFFF do not).
#pragma once

#include <cstddef>
#include <string_view>

namespace ncclscope::flight_recorder {

// True if `text` is UTF-8 (surrogates allowed); else false with *bad_offset at the first byte
// of the first invalid sequence. Pure.
bool IsUtf8AllowingSurrogates(std::string_view text, size_t* bad_offset);

}  // namespace ncclscope::flight_recorder
