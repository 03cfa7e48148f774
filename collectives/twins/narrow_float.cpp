#include "collectives/twins/narrow_float.h"

#include <cstring>

namespace ncclscope::collectives {
namespace {

// What PTX's cvt.rn.f16.f32 and cvt.rn.bf16.f32 make of any NaN.
constexpr uint16_t kCanonicalNaN = 0x7FFF;

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

}  // namespace

float Bf16ToFloat(uint16_t b) noexcept {
  return FromBits(static_cast<uint32_t>(b) << 16);
}

uint16_t FloatToBf16(float f) noexcept {
  const uint32_t u = Bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return kCanonicalNaN;
  // Adding 0x7FFF plus the lowest kept bit rounds the dropped half to nearest, ties to even; a
  // carry into the exponent is the correct rounding up (to infinity past the largest finite).
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float HalfToFloat(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return FromBits(sign | 0x7F800000u | (mant << 13));  // inf, NaN
  if (exp != 0) return FromBits(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return FromBits(sign);  // zero
  // Subnormal: normalize (its value is mant x 2^-24).
  int e = -1;
  do {
    ++e;
    mant <<= 1;
  } while ((mant & 0x400u) == 0);
  return FromBits(sign | static_cast<uint32_t>(112 - e) << 23 | (mant & 0x3FFu) << 13);
}

uint16_t FloatToHalf(float f) noexcept {
  const uint32_t u = Bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return kCanonicalNaN;
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds past 65504: inf
  if (abs >= 0x38800000u) {  // normal in fp16 (at least 2^-14)
    const uint32_t rounded = abs + 0xFFFu + ((abs >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
  }
  if (abs < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): zero
  // Subnormal in fp16: the significand with its hidden bit, shifted to units of 2^-24, rounded to
  // nearest even.
  const uint32_t exp = abs >> 23;
  const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - exp;  // 14 .. 24
  const uint32_t half_ulp = 1u << (shift - 1);
  uint32_t q = mant >> shift;
  const uint32_t rest = mant & ((1u << shift) - 1u);
  if (rest > half_ulp || (rest == half_ulp && (q & 1u) != 0)) ++q;
  return static_cast<uint16_t>(sign | q);
}

}  // namespace ncclscope::collectives
