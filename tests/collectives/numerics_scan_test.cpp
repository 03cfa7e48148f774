// The NaN/Inf scan (collectives/numerics/numerics_scan.h) and its CPU twin: every format's
// encodings classified against decodings written independently (the host's own float and double,
// narrow_float.h's fp16/bf16 widening, the emulator's fp8 decoders and a decoding from the formats'
// definitions), counts and the first index of whole buffers under many grids, aligned or not.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "collectives/numerics/numerics_twin.h"
#include "collectives/twins/narrow_float.h"
#include "sim/emulator/float_formats.h"

namespace ncclscope::collectives {
namespace {

ElementClass ClassOf(double v) {
  if (std::isnan(v)) return ElementClass::kNaN;
  return std::isinf(v) ? ElementClass::kInf : ElementClass::kFinite;
}

// An fp8 code decoded from the format's definition: 1 sign bit, `ebits` exponent bits with bias
// 2^(ebits-1) - 1, `mbits` fraction bits; `ieee` says the all-ones exponent is Inf/NaN (e5m2),
// otherwise only all-ones exponent and fraction is NaN (e4m3fn).
double DecodeFp8(uint8_t code, int ebits, int mbits, bool ieee) {
  const int sign = code >> 7;
  const int exp = (code >> mbits) & ((1 << ebits) - 1);
  const int frac = code & ((1 << mbits) - 1);
  const int all_ones = (1 << ebits) - 1;
  if (ieee && exp == all_ones) {
    return frac == 0 ? (sign ? -INFINITY : INFINITY) : std::numeric_limits<double>::quiet_NaN();
  }
  if (!ieee && exp == all_ones && frac == (1 << mbits) - 1) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  const int bias = (1 << (ebits - 1)) - 1;
  const double mant = exp == 0 ? frac / double(1 << mbits) : 1.0 + frac / double(1 << mbits);
  const double v = std::ldexp(mant, (exp == 0 ? 1 : exp) - bias);
  return sign ? -v : v;
}

TEST(NumericsFormat, EveryNcclDtypeHasAFormatAndIntegersAreNotScanned) {
  const NumericFormat expected[12] = {
      NumericFormat::kInteger, NumericFormat::kInteger, NumericFormat::kInteger,
      NumericFormat::kInteger, NumericFormat::kInteger, NumericFormat::kInteger,
      NumericFormat::kFp16,    NumericFormat::kFp32,    NumericFormat::kFp64,
      NumericFormat::kBf16,    NumericFormat::kFp8E4m3, NumericFormat::kFp8E5m2};
  const uint32_t bytes[12] = {0, 0, 0, 0, 0, 0, 2, 4, 8, 2, 1, 1};
  for (int32_t d = 0; d < 12; ++d) {
    NumericFormat f{};
    ASSERT_TRUE(NumericFormatOf(d, &f)) << d;
    EXPECT_EQ(f, expected[d]) << d;
    EXPECT_EQ(ElementBytes(f), bytes[d]) << d;
  }
  NumericFormat f{};
  EXPECT_FALSE(NumericFormatOf(-1, &f));
  EXPECT_FALSE(NumericFormatOf(12, &f));
  EXPECT_STREQ(NumericFormatName(NumericFormat::kFp8E4m3), "fp8e4m3");
  EXPECT_STREQ(NumericFormatName(NumericFormat::kInteger), "integer");
  EXPECT_EQ(NumericScanKernelName(NumericFormat::kInteger), nullptr);
  EXPECT_STREQ(NumericScanKernelName(NumericFormat::kBf16), "ncclscope_numerics_scan_bf16");
}

TEST(NumericsClassify, Fp32EdgeValuesAndPayloads) {
  const float finite[] = {0.0f,
                          -0.0f,
                          1.0f,
                          -3.5f,
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::lowest(),
                          std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::denorm_min(),
                          -std::numeric_limits<float>::denorm_min()};
  for (float v : finite) {
    EXPECT_EQ(ClassifyElement(NumericFormat::kFp32, std::bit_cast<uint32_t>(v)),
              ElementClass::kFinite)
        << v;
  }
  EXPECT_EQ(ClassifyElement(NumericFormat::kFp32, 0x7F800000u), ElementClass::kInf);
  EXPECT_EQ(ClassifyElement(NumericFormat::kFp32, 0xFF800000u), ElementClass::kInf);
  // Quiet, signalling (top fraction bit clear), largest payload, negative NaN.
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0x7FBFFFFFu, 0x7FFFFFFFu, 0xFFC00001u}) {
    EXPECT_EQ(ClassifyElement(NumericFormat::kFp32, nan), ElementClass::kNaN) << std::hex << nan;
  }
  // Random bit patterns against the host's own classification of the same bits.
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = rng();
    if (i % 4 == 0) bits |= 0x7F800000u;  // many in the all-ones exponent
    ASSERT_EQ(ClassifyElement(NumericFormat::kFp32, bits), ClassOf(std::bit_cast<float>(bits)))
        << std::hex << bits;
  }
}

TEST(NumericsClassify, Fp64EdgeValuesAndPayloads) {
  const double finite[] = {0.0,
                           -0.0,
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::lowest(),
                           std::numeric_limits<double>::min(),
                           std::numeric_limits<double>::denorm_min(),
                           -std::numeric_limits<double>::denorm_min()};
  for (double v : finite) {
    EXPECT_EQ(ClassifyElement(NumericFormat::kFp64, std::bit_cast<uint64_t>(v)),
              ElementClass::kFinite)
        << v;
  }
  EXPECT_EQ(ClassifyElement(NumericFormat::kFp64, 0x7FF0000000000000ull), ElementClass::kInf);
  EXPECT_EQ(ClassifyElement(NumericFormat::kFp64, 0xFFF0000000000000ull), ElementClass::kInf);
  for (uint64_t nan : {0x7FF8000000000000ull, 0x7FF0000000000001ull, 0x7FF7FFFFFFFFFFFFull,
                       0xFFFFFFFFFFFFFFFFull, 0x7FF0000100000000ull}) {
    EXPECT_EQ(ClassifyElement(NumericFormat::kFp64, nan), ElementClass::kNaN) << std::hex << nan;
  }
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200000; ++i) {
    uint64_t bits = rng();
    if (i % 4 == 0) bits |= 0x7FF0000000000000ull;
    ASSERT_EQ(ClassifyElement(NumericFormat::kFp64, bits), ClassOf(std::bit_cast<double>(bits)))
        << std::hex << bits;
  }
}

// Every one of the 65536 codes, against the exact widening to fp32 of narrow_float.h.
TEST(NumericsClassify, EveryFp16AndBf16Code) {
  for (uint32_t code = 0; code < 0x10000; ++code) {
    const auto h = static_cast<uint16_t>(code);
    ASSERT_EQ(ClassifyElement(NumericFormat::kFp16, h), ClassOf(HalfToFloat(h))) << code;
    ASSERT_EQ(ClassifyElement(NumericFormat::kBf16, h), ClassOf(Bf16ToFloat(h))) << code;
  }
  // The named edges: -0, smallest denormal, largest finite, Inf, signalling and quiet NaN.
  EXPECT_EQ(ClassifyElement(NumericFormat::kFp16, 0x8000), ElementClass::kFinite);
  EXPECT_EQ(ClassifyElement(NumericFormat::kFp16, 0x0001), ElementClass::kFinite);
  EXPECT_EQ(ClassifyElement(NumericFormat::kFp16, 0x7BFF), ElementClass::kFinite);
  EXPECT_EQ(ClassifyElement(NumericFormat::kFp16, 0xFC00), ElementClass::kInf);
  EXPECT_EQ(ClassifyElement(NumericFormat::kFp16, 0x7C01), ElementClass::kNaN);
  EXPECT_EQ(ClassifyElement(NumericFormat::kFp16, 0x7E00), ElementClass::kNaN);
  EXPECT_EQ(ClassifyElement(NumericFormat::kBf16, 0x7F7F), ElementClass::kFinite);
  EXPECT_EQ(ClassifyElement(NumericFormat::kBf16, 0x7F80), ElementClass::kInf);
  EXPECT_EQ(ClassifyElement(NumericFormat::kBf16, 0xFF81), ElementClass::kNaN);
  EXPECT_EQ(ClassifyElement(NumericFormat::kBf16, 0x8001), ElementClass::kFinite);
}

// Every one of the 256 codes of each fp8 format, against two decodings: the formats' definition
// and the emulator's (sim/emulator/float_formats.h).
TEST(NumericsClassify, EveryFp8Code) {
  int e4m3_nan = 0;
  int e5m2_nan = 0;
  int e5m2_inf = 0;
  for (uint32_t code = 0; code < 256; ++code) {
    const auto b = static_cast<uint8_t>(code);
    const ElementClass e4m3 = ClassifyElement(NumericFormat::kFp8E4m3, b);
    const ElementClass e5m2 = ClassifyElement(NumericFormat::kFp8E5m2, b);
    EXPECT_EQ(e4m3, ClassOf(DecodeFp8(b, 4, 3, false))) << code;
    EXPECT_EQ(e4m3, ClassOf(ncclsim::e4m3ToDouble(b))) << code;
    EXPECT_EQ(e5m2, ClassOf(DecodeFp8(b, 5, 2, true))) << code;
    EXPECT_EQ(e5m2, ClassOf(ncclsim::e5m2ToDouble(b))) << code;
    e4m3_nan += e4m3 == ElementClass::kNaN;
    e5m2_nan += e5m2 == ElementClass::kNaN;
    e5m2_inf += e5m2 == ElementClass::kInf;
  }
  // e4m3fn: NaN only at S.1111.111, no Inf (0x7E is 448, finite); e5m2: +-Inf and 6 NaNs.
  EXPECT_EQ(e4m3_nan, 2);
  EXPECT_EQ(ClassifyElement(NumericFormat::kFp8E4m3, 0x7E), ElementClass::kFinite);
  EXPECT_EQ(ClassifyElement(NumericFormat::kFp8E4m3, 0x78), ElementClass::kFinite);
  EXPECT_EQ(e5m2_inf, 2);
  EXPECT_EQ(e5m2_nan, 6);
}

// A buffer of `n` elements of format f, every element a finite code, at a 16-byte aligned
// address plus `offset` bytes.
struct Buffer {
  std::vector<uint64_t> storage;
  unsigned char* data;
  uint32_t bytes;

  Buffer(NumericFormat f, size_t n, size_t offset) : bytes(ElementBytes(f)) {
    storage.assign((n * bytes + offset + 32) / 8 + 1, 0);
    auto* base = reinterpret_cast<unsigned char*>(storage.data());
    base += (16 - reinterpret_cast<uintptr_t>(base) % 16) % 16;
    data = base + offset;
    // Bytes 0x31..0x37: every element they form is finite in every format (small exponents).
    for (size_t i = 0; i < n * bytes; ++i) data[i] = static_cast<unsigned char>(0x31 + i % 7);
  }

  void Put(size_t index, uint64_t bits) { std::memcpy(data + index * bytes, &bits, bytes); }
};

struct Special {
  uint64_t nan;
  uint64_t inf;  // 0: the format has none
};

Special SpecialsOf(NumericFormat f) {
  switch (f) {
    case NumericFormat::kFp16:
      return {0x7E00, 0xFC00};
    case NumericFormat::kFp32:
      return {0x7F800001, 0x7F800000};
    case NumericFormat::kFp64:
      return {0xFFF8000000000000ull, 0x7FF0000000000000ull};
    case NumericFormat::kBf16:
      return {0x7FC1, 0xFF80};
    case NumericFormat::kFp8E4m3:
      return {0xFF, 0};
    case NumericFormat::kFp8E5m2:
      return {0x7D, 0xFC};
    default:
      return {0, 0};
  }
}

constexpr NumericFormat kScanned[] = {NumericFormat::kFp16,    NumericFormat::kFp32,
                                      NumericFormat::kFp64,    NumericFormat::kBf16,
                                      NumericFormat::kFp8E4m3, NumericFormat::kFp8E5m2};

struct Grid {
  uint32_t blocks;
  uint32_t threads;
};
constexpr Grid kGrids[] = {{1, 1}, {1, 3}, {2, 1}, {3, 7}, {1, 32}, {4, 32}, {5, 512}, {64, 64}};

// NaNs and Infs placed in the buffer are counted once each and the lowest index of any is first,
// for every grid and with the buffer aligned on 16 bytes or not (the pack path and the element
// path).
TEST(NumericsScanTwin, CountsAndFirstIndexDoNotDependOnGridOrAlignment) {
  for (NumericFormat f : kScanned) {
    const Special s = SpecialsOf(f);
    for (size_t n : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{1000}, size_t{4099}}) {
      for (size_t offset : {size_t{0}, size_t{ElementBytes(f)}, size_t{8}, size_t{3}}) {
        Buffer buf(f, n, offset);
        uint64_t nan = 0;
        uint64_t inf = 0;
        uint64_t first = kNoNonFinite;
        // The last element, then every 97th from 5 (NaN) or 13 (Inf) where it fits.
        buf.Put(n - 1, s.nan);
        ++nan;
        first = n - 1;
        for (size_t i = 5; i + 1 < n; i += 97) {
          buf.Put(i, s.nan);
          ++nan;
          first = std::min<uint64_t>(first, i);
        }
        if (s.inf != 0) {
          for (size_t i = 13; i + 1 < n; i += 97) {
            buf.Put(i, s.inf);
            ++inf;
            first = std::min<uint64_t>(first, i);
          }
        }
        for (const Grid& g : kGrids) {
          const NumericScanResult r = ScanTwin(f, buf.data, n, g.blocks, g.threads);
          EXPECT_EQ(r.nan_count, nan) << NumericFormatName(f) << " n=" << n << " off=" << offset;
          EXPECT_EQ(r.inf_count, inf) << NumericFormatName(f) << " n=" << n;
          EXPECT_EQ(r.first_nonfinite, first) << NumericFormatName(f) << " n=" << n;
        }
      }
    }
  }
}

TEST(NumericsScanTwin, AllFiniteBuffersWithDenormalsAndNegativeZeroFindNothing) {
  for (NumericFormat f : kScanned) {
    const uint64_t sign = uint64_t{1} << (8 * ElementBytes(f) - 1);
    // 0, -0, the smallest denormal and its negative (in every format: fraction 1, exponent 0).
    const uint64_t codes[] = {0, sign, 1, sign | 1};
    Buffer buf(f, 777, 0);
    for (size_t i = 0; i < 777; ++i) buf.Put(i, codes[i % 4]);
    const NumericScanResult r = ScanTwin(f, buf.data, 777, 3, 32);
    EXPECT_EQ(r.nan_count, 0u) << NumericFormatName(f);
    EXPECT_EQ(r.inf_count, 0u) << NumericFormatName(f);
    EXPECT_EQ(r.first_nonfinite, kNoNonFinite) << NumericFormatName(f);
  }
}

TEST(NumericsScanTwin, EveryElementNonFiniteIsCountedInFull) {
  for (NumericFormat f : kScanned) {
    Buffer buf(f, 1024, 0);
    for (size_t i = 0; i < 1024; ++i) buf.Put(i, SpecialsOf(f).nan);
    const NumericScanResult r = ScanTwin(f, buf.data, 1024, 7, 33);
    EXPECT_EQ(r.nan_count, 1024u) << NumericFormatName(f);
    EXPECT_EQ(r.first_nonfinite, 0u) << NumericFormatName(f);
  }
}

TEST(NumericsScanTwin, EmptyBuffersIntegerFormatsAndEmptyGridsFindNothing) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (NumericFormat f : kScanned) {
    const NumericScanResult r = ScanTwin(f, &nan, 0, 4, 32);
    EXPECT_EQ(r.nan_count, 0u);
    EXPECT_EQ(r.first_nonfinite, kNoNonFinite);
  }
  // Integer bytes that would be NaN as floats are not scanned.
  EXPECT_EQ(ScanTwin(NumericFormat::kInteger, &nan, 4).nan_count, 0u);
  EXPECT_EQ(ScanTwin(NumericFormat::kFp32, &nan, 1, 0, 32).nan_count, 0u);
  EXPECT_EQ(ScanTwin(NumericFormat::kFp32, &nan, 1).nan_count, 1u);
}

// The kernel's entry adds to the result the host supplied, as the GPU's atomics do: two launches
// over two halves into one result give the whole buffer's counts and its first index.
TEST(NumericsScanTwin, LaunchesAddIntoTheSuppliedResult) {
  std::vector<float> v(100, 1.0f);
  v[70] = INFINITY;
  v[20] = NAN;
  v[90] = -NAN;
  NumericScanResult result = EmptyScan();
  RunNumericScanTwinKernel(NumericFormat::kFp32,
                           {reinterpret_cast<unsigned char*>(v.data() + 50), 50, &result}, 2, 32);
  EXPECT_EQ(result.first_nonfinite, 20u);  // 70 - 50
  RunNumericScanTwinKernel(NumericFormat::kFp32,
                           {reinterpret_cast<unsigned char*>(v.data()), 50, &result}, 3, 8);
  EXPECT_EQ(result.nan_count, 2u);
  EXPECT_EQ(result.inf_count, 1u);
  EXPECT_EQ(result.first_nonfinite, 20u);
}

}  // namespace
}  // namespace ncclscope::collectives
