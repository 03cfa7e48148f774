#include "sim/scenario/data_pattern.h"

#include <algorithm>
#include <cmath>

#include "sim/scenario/dtype_codec.h"
#include "sim/scenario/names.h"

namespace ncclscope::sim {
namespace {

// SplitMix64: a good enough stateless hash to turn coordinates into pattern values.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t hashOf(const PatternKey& k, uint64_t a, uint64_t b) {
  uint64_t h = mix(k.seed);
  for (uint64_t v : {static_cast<uint64_t>(k.comm), static_cast<uint64_t>(k.step),
                     static_cast<uint64_t>(k.op), a, b}) {
    h = mix(h ^ v);
  }
  // Mixed in only inside a coalesced op, so every other op keeps the values it always had.
  if (k.part >= 0) h = mix(h ^ (0x636f616cULL + static_cast<uint64_t>(k.part)));
  return h;
}

bool isPowerOfTwo(double v) {
  int e = 0;
  return v > 0 && std::frexp(v, &e) == 0.5;
}

// Largest value one rank may contribute so that the whole reduction stays exact.
double perRankMax(const PatternShape& s) {
  const DtypeLimits lim = dtypeLimits(s.dtype);
  if (!opReduces(s.kind)) return lim.exact_int;
  switch (s.redop) {
    case RedOp::kSum:
    case RedOp::kAvg:
      return std::floor(lim.exact_int / s.nranks);
    case RedOp::kPreMulSum:
      return std::floor(lim.exact_int / (s.nranks * std::max(1.0, std::fabs(s.scalar))));
    default:
      return lim.exact_int;
  }
}

double scalarInDtype(const PatternShape& s) {
  unsigned char buf[8];
  encodeValue(s.scalar, s.dtype, buf);
  return decodeValue(buf, s.dtype);
}

}  // namespace

DtypeLimits dtypeLimits(ncclDataType_t dtype) {
  constexpr double kCap = 1 << 20;  // keeps sums far from every integer type's range
  switch (dtype) {
    case ncclInt8:
      return {127, 6};
    case ncclUint8:
      return {254, 7};  // 255 is the 0xff fill of receive buffers
    case ncclFloat16:
      return {2048, 15};
    case ncclBfloat16:
      return {256, 30};
    case ncclFloat8e4m3:
      return {16, 8};
    case ncclFloat8e5m2:
      return {8, 15};
    default:
      return {kCap, 30};
  }
}

double inputValue(const PatternKey& key, const PatternShape& s, int src, size_t index) {
  const uint64_t h = hashOf(key, static_cast<uint64_t>(src), index);
  if (opReduces(s.kind) && s.redop == RedOp::kProd) {
    // An element-dependent number of ranks contribute 2, the rest 1: the product is 2^t with
    // t within the dtype's exponent range, and the pattern still differs per element.
    const uint64_t e = hashOf(key, ~0ULL, index);
    const int t_max = std::min(s.nranks, dtypeLimits(s.dtype).max_pow2);
    const auto t = static_cast<int>(e % static_cast<uint64_t>(t_max + 1));
    const auto slot = static_cast<int>((static_cast<uint64_t>(src) + (e >> 8)) % s.nranks);
    return slot < t ? 2.0 : 1.0;
  }
  const double m = perRankMax(s);
  if (m >= 1) return static_cast<double>(h % (static_cast<uint64_t>(m) + 1));
  // Too many ranks for the dtype to sum small values exactly: one rank per element gives 1.
  const uint64_t e = hashOf(key, ~0ULL, index);
  return static_cast<int>((static_cast<uint64_t>(src) + e) % s.nranks) == 0 ? 1.0 : 0.0;
}

double reducedValue(const PatternKey& key, const PatternShape& s, size_t index) {
  const double scalar = scalarInDtype(s);
  double acc = 0;
  for (int r = 0; r < s.nranks; ++r) {
    const double v = inputValue(key, s, r, index);
    if (r == 0) {
      acc = s.redop == RedOp::kPreMulSum ? v * scalar : v;
      continue;
    }
    switch (s.redop) {
      case RedOp::kSum:
      case RedOp::kAvg:
        acc += v;
        break;
      case RedOp::kPreMulSum:
        acc += v * scalar;
        break;
      case RedOp::kProd:
        acc *= v;
        break;
      case RedOp::kMax:
        acc = std::max(acc, v);
        break;
      case RedOp::kMin:
        acc = std::min(acc, v);
        break;
    }
  }
  if (s.redop == RedOp::kAvg) {
    acc = dtypeIsFloat(s.dtype) ? acc / s.nranks : std::floor(acc / s.nranks);
  }
  return acc;
}

double tolerance(const PatternShape& s) {
  if (!dtypeIsFloat(s.dtype) || !opReduces(s.kind)) return 0.0;
  const bool inexact = s.redop == RedOp::kAvg ||
                       (s.redop == RedOp::kPreMulSum && !isPowerOfTwo(std::fabs(s.scalar)));
  if (!inexact) return 0.0;
  // Each of n terms and partial sums may round once; values are at most perRankMax each.
  return (s.nranks + 2) * dtypeEpsilon(s.dtype) *
         std::max(1.0, perRankMax(s) * std::fabs(s.scalar));
}

}  // namespace ncclscope::sim
