// Bit-exact narrow float conversions: rounding to nearest even, subnormals, saturation.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sim/emulator/float_formats.h"

namespace ncclsim {
namespace {

TEST(FloatFormats, HalfKnownPatternsAndTiesToEven) {
  EXPECT_EQ(doubleToHalf(1.0), 0x3C00);
  EXPECT_EQ(doubleToHalf(-2.0), 0xC000);
  EXPECT_EQ(doubleToHalf(65504.0), 0x7BFF);
  EXPECT_EQ(doubleToHalf(1e6), 0x7C00);                           // overflow -> inf
  EXPECT_EQ(doubleToHalf(1.0 + std::ldexp(1, -11)), 0x3C00);      // tie -> even (down)
  EXPECT_EQ(doubleToHalf(1.0 + 3 * std::ldexp(1, -11)), 0x3C02);  // tie -> even (up)
  EXPECT_EQ(doubleToHalf(std::ldexp(1, -24)), 0x0001);            // smallest subnormal
  EXPECT_EQ(halfToDouble(0x0001), std::ldexp(1, -24));
  EXPECT_EQ(halfToDouble(0x3555), 0.333251953125);
  EXPECT_TRUE(std::isnan(halfToDouble(doubleToHalf(std::nan("")))));
}

TEST(FloatFormats, Bfloat16KnownPatterns) {
  EXPECT_EQ(doubleToBf16(1.0), 0x3F80);
  EXPECT_EQ(doubleToBf16(-3.0), 0xC040);
  EXPECT_EQ(doubleToBf16(1.0 + std::ldexp(1, -8)), 0x3F80);      // tie -> even
  EXPECT_EQ(doubleToBf16(1.0 + 3 * std::ldexp(1, -8)), 0x3F82);  // tie -> even (up)
  EXPECT_EQ(bf16ToDouble(0x4049), 3.140625);
}

TEST(FloatFormats, Fp8E4m3SaturatesAndHasNoInfinity) {
  EXPECT_EQ(doubleToE4m3(1.0), 0x38);
  EXPECT_EQ(doubleToE4m3(448.0), 0x7E);
  EXPECT_EQ(doubleToE4m3(1000.0), 0x7E);
  EXPECT_EQ(doubleToE4m3(-1e9), 0xFE);
  EXPECT_EQ(doubleToE4m3(std::numeric_limits<double>::infinity()), 0x7E);
  EXPECT_EQ(doubleToE4m3(std::ldexp(1, -9)), 0x01);   // smallest subnormal
  EXPECT_EQ(doubleToE4m3(17.0), doubleToE4m3(16.0));  // tie -> even
  EXPECT_TRUE(std::isnan(e4m3ToDouble(0x7F)));
  for (int v = 0; v <= 16; ++v) EXPECT_EQ(e4m3ToDouble(doubleToE4m3(v)), v);
}

TEST(FloatFormats, Fp8E5m2Saturates) {
  EXPECT_EQ(doubleToE5m2(1.0), 0x3C);
  EXPECT_EQ(doubleToE5m2(57344.0), 0x7B);
  EXPECT_EQ(doubleToE5m2(1e9), 0x7B);
  EXPECT_EQ(e5m2ToDouble(doubleToE5m2(9.0)), 8.0);    // tie -> even
  EXPECT_EQ(e5m2ToDouble(doubleToE5m2(11.0)), 12.0);  // tie -> even
  EXPECT_TRUE(std::isinf(e5m2ToDouble(0x7C)));
  for (int v = 0; v <= 8; ++v) EXPECT_EQ(e5m2ToDouble(doubleToE5m2(v)), v);
}

}  // namespace
}  // namespace ncclsim
