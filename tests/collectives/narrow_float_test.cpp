// The 16-bit conversions of the collectives' CPU twin against the emulator's independent ones
// (sim/emulator/float_formats.h, through double): every fp16 and bf16 value widens exactly and
// narrows back to itself, and narrowing rounds to nearest, ties to even, at every boundary.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "collectives/twins/narrow_float.h"
#include "sim/emulator/float_formats.h"

namespace ncclscope::collectives {
namespace {

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

bool IsNaN16(uint16_t h, bool bf16) {
  return bf16 ? (h & 0x7FFF) > 0x7F80 : (h & 0x7FFF) > 0x7C00;
}

TEST(NarrowFloat, EveryValueWidensExactlyAndNarrowsBackToItself) {
  for (uint32_t i = 0; i <= 0xFFFF; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float hf = HalfToFloat(h);
    const float bf = Bf16ToFloat(h);
    if (IsNaN16(h, false)) {
      EXPECT_TRUE(std::isnan(hf));
      EXPECT_EQ(FloatToHalf(hf), 0x7FFF);  // PTX's canonical NaN
    } else {
      ASSERT_EQ(static_cast<double>(hf), ncclsim::halfToDouble(h)) << std::hex << i;
      ASSERT_EQ(FloatToHalf(hf), h) << std::hex << i;
    }
    if (IsNaN16(h, true)) {
      EXPECT_TRUE(std::isnan(bf));
    } else {
      ASSERT_EQ(static_cast<double>(bf), ncclsim::bf16ToDouble(h)) << std::hex << i;
      ASSERT_EQ(FloatToBf16(bf), h) << std::hex << i;
    }
  }
}

TEST(NarrowFloat, NarrowingRoundsToNearestEvenAsTheEmulatorDoes) {
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 2'000'000; ++i) {
    const float f = FromBits(bits(gen));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToHalf(f), ncclsim::doubleToHalf(f)) << f;
    ASSERT_EQ(FloatToBf16(f), ncclsim::doubleToBf16(f)) << f;
  }
  // Exactly halfway cases, subnormals, the overflow edge.
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65519.99f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);               // the tie rounds to even: infinity
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // half the smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units: ties to even 2
  EXPECT_EQ(FloatToHalf(-std::ldexp(1.0f, -24)), 0x8001);
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to infinity
  EXPECT_EQ(FloatToBf16(1.00390625f), 0x3F80);  // 1 + 2^-8: the tie goes to the even 1.0
  EXPECT_EQ(FloatToBf16(1.01171875f), 0x3F82);  // 1 + 3 x 2^-8: the tie goes to the even side
}

}  // namespace
}  // namespace ncclscope::collectives
