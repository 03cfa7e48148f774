// The size syntax every ncclscope setting shares (trace/size_text.h): what the probe's
// NCCLSCOPE_ACCEL_BUFFER and a scenario's "buffer" accept alike.
#include <gtest/gtest.h>

#include <cstdint>

#include "trace/size_text.h"

namespace ncclscope::trace {
namespace {

TEST(SizeText, DigitsWithAnOptionalBinarySuffix) {
  uint64_t v = 0;
  EXPECT_TRUE(ParseSizeText("1048576", &v));
  EXPECT_EQ(v, 1048576u);
  EXPECT_TRUE(ParseSizeText("16m", &v));
  EXPECT_EQ(v, uint64_t{16} << 20);
  EXPECT_TRUE(ParseSizeText("1024K", &v));
  EXPECT_EQ(v, uint64_t{1} << 20);
  EXPECT_TRUE(ParseSizeText("2g", &v));
  EXPECT_EQ(v, uint64_t{2} << 30);
  EXPECT_TRUE(ParseSizeText("0", &v));
  EXPECT_EQ(v, 0u);
}

TEST(SizeText, AnythingElseIsRefusedAndLeavesTheValue) {
  for (const char* bad : {"", "-1", "+5", " 5", "5 ", "1.5m", "m", "5mb", "5t", "0x10",
                          "18446744073709551616", "17179869184g"}) {
    uint64_t v = 7;
    EXPECT_FALSE(ParseSizeText(bad, &v)) << '"' << bad << '"';
    EXPECT_EQ(v, 7u) << bad;
  }
  uint64_t v = 0;
  EXPECT_TRUE(ParseSizeText("18446744073709551615", &v));  // 2^64 - 1 still fits
  EXPECT_EQ(v, UINT64_MAX);
}

}  // namespace
}  // namespace ncclscope::trace
