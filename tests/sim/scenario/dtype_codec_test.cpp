#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "sim/scenario/data_pattern.h"
#include "sim/scenario/dtype_codec.h"
#include "sim/scenario/names.h"

namespace ncclscope::sim {
namespace {

uint32_t bitsOf(double v, ncclDataType_t t) {
  uint64_t raw = 0;
  encodeValue(v, t, &raw);
  return static_cast<uint32_t>(raw & ((dtypeSize(t) == 1) ? 0xffu : 0xffffu));
}

double fromBits(uint32_t bits, ncclDataType_t t) {
  return decodeValue(&bits, t);
}

TEST(DtypeCodec, KnownEncodings) {
  EXPECT_EQ(bitsOf(1.0, ncclFloat16), 0x3c00u);
  EXPECT_EQ(bitsOf(-2.0, ncclFloat16), 0xc000u);
  EXPECT_EQ(bitsOf(65504.0, ncclFloat16), 0x7bffu);
  EXPECT_EQ(bitsOf(std::ldexp(1.0, -24), ncclFloat16), 0x0001u);  // smallest subnormal
  EXPECT_EQ(bitsOf(1.0, ncclBfloat16), 0x3f80u);
  EXPECT_EQ(bitsOf(1.0, ncclFloat8e4m3), 0x38u);
  EXPECT_EQ(bitsOf(448.0, ncclFloat8e4m3), 0x7eu);
  EXPECT_EQ(bitsOf(1.0, ncclFloat8e5m2), 0x3cu);
  EXPECT_EQ(bitsOf(1e9, ncclFloat8e5m2), 0x7cu);  // overflow -> inf
  EXPECT_TRUE(std::isnan(fromBits(0x7f, ncclFloat8e4m3)));
  EXPECT_TRUE(std::isinf(fromBits(0x7c, ncclFloat8e5m2)));
  EXPECT_TRUE(std::isnan(fromBits(0xffff, ncclFloat16)));
  EXPECT_EQ(fromBits(0x7e, ncclFloat8e4m3), 448.0);
  EXPECT_EQ(fromBits(0x3e, ncclFloat8e5m2), 1.5);
}

TEST(DtypeCodec, RoundsToNearestEven) {
  EXPECT_EQ(fromBits(bitsOf(2049.0, ncclFloat16), ncclFloat16), 2048.0);
  EXPECT_EQ(fromBits(bitsOf(2051.0, ncclFloat16), ncclFloat16), 2052.0);
  EXPECT_EQ(fromBits(bitsOf(17.0, ncclFloat8e4m3), ncclFloat8e4m3), 16.0);
}

// dtypeLimits promises every integer 0..exact_int is exact, and for the narrow floats the bound is
// tight: one more is not representable. Powers of two up to max_pow2 are exact too.
TEST(DtypeCodec, LimitsAreExactAndTight) {
  for (int t = 0; t < ncclNumTypes; ++t) {
    const auto dtype = static_cast<ncclDataType_t>(t);
    const DtypeLimits lim = dtypeLimits(dtype);
    SCOPED_TRACE(std::string(dtypeName(dtype)));
    unsigned char buf[8];
    for (double v = 0; v <= std::min(lim.exact_int, 5000.0); ++v) {
      encodeValue(v, dtype, buf);
      ASSERT_EQ(decodeValue(buf, dtype), v);
    }
    for (int p = 0; p <= lim.max_pow2; ++p) {
      encodeValue(std::ldexp(1.0, p), dtype, buf);
      ASSERT_EQ(decodeValue(buf, dtype), std::ldexp(1.0, p));
    }
    if (dtype == ncclFloat16 || dtype == ncclBfloat16 || dtype == ncclFloat8e4m3 ||
        dtype == ncclFloat8e5m2) {
      encodeValue(lim.exact_int + 1, dtype, buf);
      EXPECT_NE(decodeValue(buf, dtype), lim.exact_int + 1);
    }
  }
}

}  // namespace
}  // namespace ncclscope::sim
