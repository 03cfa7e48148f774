// One element of an MoE row (include/ncclscope/moe.h: bf16, fp16 or fp32) read as float32 and
// written back rounded to nearest even: the CPU twin's combine, and every check that computes
// what the kernels must give (ncclscope-gpu-check, the twin tests), read and write rows this way.
#pragma once

#include <cstdint>
#include <cstring>

#include "collectives/include/ncclscope/moe.h"
#include "collectives/twins/narrow_float.h"

namespace ncclscope::collectives {

inline float LoadMoeElement(int32_t dtype, const unsigned char* row, int64_t h) {
  if (dtype == NCCLSCOPE_MOE_FP32) {
    float f;
    std::memcpy(&f, row + h * 4, 4);
    return f;
  }
  uint16_t v;
  std::memcpy(&v, row + h * 2, 2);
  return dtype == NCCLSCOPE_MOE_BF16 ? Bf16ToFloat(v) : HalfToFloat(v);
}

inline void StoreMoeElement(int32_t dtype, unsigned char* row, int64_t h, float f) {
  if (dtype == NCCLSCOPE_MOE_FP32) {
    std::memcpy(row + h * 4, &f, 4);
    return;
  }
  const uint16_t v = dtype == NCCLSCOPE_MOE_BF16 ? FloatToBf16(f) : FloatToHalf(f);
  std::memcpy(row + h * 2, &v, 2);
}

}  // namespace ncclscope::collectives
