#include "collectives/gpu_check/test_data.h"

#include <cstdio>
#include <cstring>

#include "collectives/gpu_check/splitmix.h"
#include "collectives/types/accel_types.h"

namespace ncclscope::gpu_check {
namespace {

namespace nc = collectives;

using Random = SplitMix64;

// Sign, exponent field in [lo, lo + span), mantissa: every bit random.
uint32_t Fp32Bits(uint64_t r) {
  const uint32_t exponent = 100 + static_cast<uint32_t>((r >> 32) % 50);  // 2^-27 .. 2^22
  return (static_cast<uint32_t>(r >> 63) << 31) | (exponent << 23) |
         (static_cast<uint32_t>(r) & 0x7FFFFFu);
}
uint16_t Fp16Bits(uint64_t r) {
  const uint32_t exponent = static_cast<uint32_t>((r >> 32) % 31);  // subnormals .. 65504
  return static_cast<uint16_t>((static_cast<uint32_t>(r >> 63) << 15) | (exponent << 10) |
                               (static_cast<uint32_t>(r) & 0x3FFu));
}
uint16_t Bf16Bits(uint64_t r) {
  const uint32_t exponent = 60 + static_cast<uint32_t>((r >> 32) % 130);  // 2^-67 .. 2^62
  return static_cast<uint16_t>((static_cast<uint32_t>(r >> 63) << 15) | (exponent << 7) |
                               (static_cast<uint32_t>(r) & 0x7Fu));
}

}  // namespace

void FillInput(const Case& c, uint64_t seed, size_t case_index, int rep, int rank,
               unsigned char* out, size_t bytes) {
  Random rng{seed * 0x100000001B3ull ^ (case_index << 40) ^ (static_cast<uint64_t>(rep) << 16) ^
             static_cast<uint64_t>(rank)};
  rng.Next();
  if (c.op != Op::kAllReduce) {  // bytes moved, not reduced
    for (size_t i = 0; i < bytes; i += 8) {
      const uint64_t r = rng.Next();
      std::memcpy(out + i, &r, bytes - i < 8 ? bytes - i : 8);
    }
    return;
  }
  if (c.dtype == nc::Dtype::kFp32) {
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
      const uint32_t v = Fp32Bits(rng.Next());
      std::memcpy(out + i, &v, 4);
    }
    return;
  }
  const bool half = c.dtype == nc::Dtype::kFp16;
  for (size_t i = 0; i + 2 <= bytes; i += 2) {
    const uint64_t r = rng.Next();
    const uint16_t v = half ? Fp16Bits(r) : Bf16Bits(r);
    std::memcpy(out + i, &v, 2);
  }
}

std::string FirstDifference(const Case& c, const unsigned char* got, const unsigned char* want,
                            size_t bytes) {
  if (std::memcmp(got, want, bytes) == 0) return "";
  size_t i = 0;
  while (got[i] == want[i]) ++i;
  const size_t element = c.op != Op::kAllReduce ? 1 : nc::DtypeBytes(c.dtype);
  char line[160];
  std::snprintf(line, sizeof(line), "byte %zu (element %zu) is 0x%02x, the CPU twin's 0x%02x", i,
                i / element, got[i], want[i]);
  return line;
}

}  // namespace ncclscope::gpu_check
