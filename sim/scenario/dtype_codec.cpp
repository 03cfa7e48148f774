#include "sim/scenario/dtype_codec.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace ncclscope::sim {
namespace {

// A small binary floating format: sign, ebits of exponent, mbits of mantissa. OCP e4m3 ("FN")
// has no infinity and uses only S.1111.111 for NaN, which buys one more binade.
struct MiniFloat {
  int ebits;
  int mbits;
  bool fn;
  int bias() const { return (1 << (ebits - 1)) - 1; }
  int maxField() const { return (1 << ebits) - 1; }
};

constexpr MiniFloat kHalf{5, 10, false};
constexpr MiniFloat kBf16{8, 7, false};
constexpr MiniFloat kE4m3{4, 3, true};
constexpr MiniFloat kE5m2{5, 2, false};

uint32_t encodeMini(double v, MiniFloat f) {
  const uint32_t sign = std::signbit(v) ? 1u << (f.ebits + f.mbits) : 0u;
  const uint32_t mant_mask = (1u << f.mbits) - 1;
  if (std::isnan(v)) return sign | (static_cast<uint32_t>(f.maxField()) << f.mbits) | mant_mask;
  double a = std::fabs(v);
  // Largest finite: e4m3 keeps the top exponent field (all but mantissa 111); others do not.
  const int top_field = f.fn ? f.maxField() : f.maxField() - 1;
  const uint32_t top_mant = f.fn ? mant_mask - 1 : mant_mask;
  const double max_finite =
      std::ldexp(1.0 + static_cast<double>(top_mant) / (1 << f.mbits), top_field - f.bias());
  if (a > max_finite) {
    if (f.fn) return sign | (static_cast<uint32_t>(f.maxField()) << f.mbits) | mant_mask;
    return sign | (static_cast<uint32_t>(f.maxField()) << f.mbits);
  }
  const int min_exp = 1 - f.bias();
  int e = std::ilogb(a);
  if (a == 0.0) return sign;
  if (e <
      min_exp) {  // subnormal; a mantissa that rounds up to 1<<mbits becomes the smallest normal
    const auto m = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, f.mbits - min_exp)));
    return sign | m;
  }
  auto m = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, f.mbits - e) - (1 << f.mbits)));
  if (m > mant_mask) {
    m = 0;
    ++e;
  }
  return sign | (static_cast<uint32_t>(e + f.bias()) << f.mbits) | m;
}

double decodeMini(uint32_t bits, MiniFloat f) {
  const bool neg = (bits >> (f.ebits + f.mbits)) & 1u;
  const int field = static_cast<int>((bits >> f.mbits) & static_cast<uint32_t>(f.maxField()));
  const uint32_t m = bits & ((1u << f.mbits) - 1);
  double a;
  if (field == 0) {
    a = std::ldexp(static_cast<double>(m), 1 - f.bias() - f.mbits);
  } else if (field == f.maxField() && (!f.fn || m == (1u << f.mbits) - 1)) {
    a = (!f.fn && m == 0) ? std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::quiet_NaN();
  } else {
    a = std::ldexp(1.0 + static_cast<double>(m) / (1 << f.mbits), field - f.bias());
  }
  return neg ? -a : a;
}

template <typename T>
void put(T v, void* dst) {
  std::memcpy(dst, &v, sizeof v);
}

template <typename T>
T get(const void* src) {
  T v;
  std::memcpy(&v, src, sizeof v);
  return v;
}

}  // namespace

void encodeValue(double v, ncclDataType_t dtype, void* dst) {
  switch (dtype) {
    case ncclInt8:
      put(static_cast<int8_t>(v), dst);
      break;
    case ncclUint8:
      put(static_cast<uint8_t>(v), dst);
      break;
    case ncclInt32:
      put(static_cast<int32_t>(v), dst);
      break;
    case ncclUint32:
      put(static_cast<uint32_t>(v), dst);
      break;
    case ncclInt64:
      put(static_cast<int64_t>(v), dst);
      break;
    case ncclUint64:
      put(static_cast<uint64_t>(v), dst);
      break;
    case ncclFloat16:
      put(static_cast<uint16_t>(encodeMini(v, kHalf)), dst);
      break;
    case ncclBfloat16:
      put(static_cast<uint16_t>(encodeMini(v, kBf16)), dst);
      break;
    case ncclFloat8e4m3:
      put(static_cast<uint8_t>(encodeMini(v, kE4m3)), dst);
      break;
    case ncclFloat8e5m2:
      put(static_cast<uint8_t>(encodeMini(v, kE5m2)), dst);
      break;
    case ncclFloat32:
      put(static_cast<float>(v), dst);
      break;
    default:
      put(v, dst);
      break;
  }
}

double decodeValue(const void* src, ncclDataType_t dtype) {
  switch (dtype) {
    case ncclInt8:
      return get<int8_t>(src);
    case ncclUint8:
      return get<uint8_t>(src);
    case ncclInt32:
      return get<int32_t>(src);
    case ncclUint32:
      return get<uint32_t>(src);
    case ncclInt64:
      return static_cast<double>(get<int64_t>(src));
    case ncclUint64:
      return static_cast<double>(get<uint64_t>(src));
    case ncclFloat16:
      return decodeMini(get<uint16_t>(src), kHalf);
    case ncclBfloat16:
      return decodeMini(get<uint16_t>(src), kBf16);
    case ncclFloat8e4m3:
      return decodeMini(get<uint8_t>(src), kE4m3);
    case ncclFloat8e5m2:
      return decodeMini(get<uint8_t>(src), kE5m2);
    case ncclFloat32:
      return get<float>(src);
    default:
      return get<double>(src);
  }
}

double dtypeEpsilon(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclFloat16:
      return std::ldexp(1.0, -kHalf.mbits);
    case ncclBfloat16:
      return std::ldexp(1.0, -kBf16.mbits);
    case ncclFloat8e4m3:
      return std::ldexp(1.0, -kE4m3.mbits);
    case ncclFloat8e5m2:
      return std::ldexp(1.0, -kE5m2.mbits);
    case ncclFloat32:
      return std::numeric_limits<float>::epsilon();
    case ncclFloat64:
      return std::numeric_limits<double>::epsilon();
    default:
      return 0.0;
  }
}

}  // namespace ncclscope::sim
