// The conversions the kernels make between the 16-bit float types and fp32, in software, bit for
// bit as CUDA's intrinsics do them: widening is exact (__half2float, __bfloat162float), narrowing
// rounds to nearest, ties to even (__float2half_rn, __float2bfloat16_rn), a NaN becomes the
// canonical NaN. The CPU twin uses them so its output equals the GPU kernels'. Pure, thread-safe.
#pragma once

#include <cstdint>

namespace ncclscope::collectives {

float HalfToFloat(uint16_t h) noexcept;
uint16_t FloatToHalf(float f) noexcept;
float Bf16ToFloat(uint16_t b) noexcept;
uint16_t FloatToBf16(float f) noexcept;

}  // namespace ncclscope::collectives
