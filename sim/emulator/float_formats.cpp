#include "sim/emulator/float_formats.h"

#include <cmath>
#include <limits>

namespace ncclsim {

namespace {

// A binary float format with a sign bit, `ebits` exponent bits and `mbits` mantissa bits.
struct Format {
  int ebits;
  int mbits;
  bool has_inf;   // IEEE-style: all-ones exponent is inf/NaN (fp16, bf16, e5m2)
  bool saturate;  // overflow goes to the largest finite value instead of inf
  uint32_t nan;   // bit pattern produced for NaN (sign excluded)
  double max_finite;
  int bias() const { return (1 << (ebits - 1)) - 1; }
  int minExp() const { return 1 - bias(); }
};

// e4m3 (OCP "FN" flavour) has no inf; only all-ones exponent with all-ones mantissa is NaN.
constexpr Format kHalf{5, 10, true, false, 0x7E00, 65504.0};
constexpr Format kBf16{8, 7, true, false, 0x7FC0, 3.38953138925153547590470800371487866880e38};
constexpr Format kE4m3{4, 3, false, true, 0x7F, 448.0};
constexpr Format kE5m2{5, 2, true, true, 0x7F, 57344.0};

double decode(const Format& f, uint32_t bits) {
  uint32_t sign = bits >> (f.ebits + f.mbits);
  uint32_t exp = (bits >> f.mbits) & ((1u << f.ebits) - 1);
  uint32_t man = bits & ((1u << f.mbits) - 1);
  uint32_t exp_ones = (1u << f.ebits) - 1;
  double v;
  if (f.has_inf && exp == exp_ones) {
    v = man == 0 ? std::numeric_limits<double>::infinity()
                 : std::numeric_limits<double>::quiet_NaN();
  } else if (!f.has_inf && exp == exp_ones && man == (1u << f.mbits) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(double(man), f.minExp() - f.mbits);
  } else {
    v = std::ldexp(double(man | (1u << f.mbits)), int(exp) - f.bias() - f.mbits);
  }
  return sign ? -v : v;
}

uint32_t encode(const Format& f, double v) {
  uint32_t sign = std::signbit(v) ? 1u << (f.ebits + f.mbits) : 0u;
  if (std::isnan(v)) return sign | f.nan;
  double a = std::fabs(v);
  uint32_t exp_ones = (1u << f.ebits) - 1;
  uint32_t inf_bits = f.has_inf ? exp_ones << f.mbits : f.nan;
  if (std::isinf(a)) return sign | (f.saturate ? encode(f, f.max_finite) : inf_bits);
  if (a == 0.0) return sign;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): unbiased exponent is e - 1
  int exp_unb = e - 1 < f.minExp() ? f.minExp() : e - 1;
  // Scaling by a power of two is exact; nearbyint rounds half to even in the default mode.
  double q = std::nearbyint(std::ldexp(a, f.mbits - exp_unb));
  double r = std::ldexp(q, exp_unb - f.mbits);
  if (r > f.max_finite) return sign | (f.saturate ? encode(f, f.max_finite) : inf_bits);
  if (q >= double(1u << (f.mbits + 1))) {  // rounding carried into the next binade
    q /= 2;
    ++exp_unb;
  }
  uint32_t man = uint32_t(q);
  if (man < (1u << f.mbits)) return sign | man;  // subnormal (only possible at minExp)
  uint32_t exp = uint32_t(exp_unb + f.bias());
  return sign | (exp << f.mbits) | (man & ((1u << f.mbits) - 1));
}

}  // namespace

double halfToDouble(uint16_t h) {
  return decode(kHalf, h);
}
uint16_t doubleToHalf(double v) {
  return uint16_t(encode(kHalf, v));
}
double bf16ToDouble(uint16_t b) {
  return decode(kBf16, b);
}
uint16_t doubleToBf16(double v) {
  return uint16_t(encode(kBf16, v));
}
double e4m3ToDouble(uint8_t b) {
  return decode(kE4m3, b);
}
uint8_t doubleToE4m3(double v) {
  return uint8_t(encode(kE4m3, v));
}
double e5m2ToDouble(uint8_t b) {
  return decode(kE5m2, b);
}
uint8_t doubleToE5m2(double v) {
  return uint8_t(encode(kE5m2, v));
}

}  // namespace ncclsim
