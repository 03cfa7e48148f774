// Internal to the digest codec: how one 64-bit time or id is written relative to a base, as a
// varint that is small for what usually occurs and exact for anything. A code's low two bits say
// its kind:
//   0  the value is 0 (the whole code is 0)
//   1  the value is base + (code >> 2), for 0 <= value - base < 2^62: the common case
//   2  a named special value (code >> 2 says which; kSpecial*)
//   3  the value is the next entry of the digest's raw column
// Pure functions: thread-safe.
#pragma once

#include <cstdint>

namespace ncclscope::exporters::digest_codes {

inline constexpr uint64_t kKindZero = 0, kKindRelative = 1, kKindSpecial = 2, kKindRaw = 3;
inline constexpr uint64_t kSpecialUntracked = 0;  // trace::kDoneUntracked
inline constexpr uint64_t kSpecialPending = 1;    // trace::PendingMarker(this record's index)
inline constexpr uint64_t kMaxPayload = (uint64_t{1} << 62) - 1;

inline uint64_t Relative(int64_t value, int64_t base) {
  // In unsigned arithmetic: hostile times must not overflow a signed subtraction.
  return static_cast<uint64_t>(value) - static_cast<uint64_t>(base);
}

// The code of `value` without special values; kKindRaw when it must go to the raw column.
inline uint64_t Code(int64_t value, int64_t base) {
  if (value == 0) return kKindZero;
  const uint64_t d = Relative(value, base);
  return d <= kMaxPayload ? (d << 2 | kKindRelative) : kKindRaw;
}

inline uint64_t SpecialCode(uint64_t which) {
  return which << 2 | kKindSpecial;
}

inline int64_t FromRelative(uint64_t payload, int64_t base) {
  return static_cast<int64_t>(static_cast<uint64_t>(base) + payload);
}

}  // namespace ncclscope::exporters::digest_codes
