// Software conversions between double and the narrow float formats NCCL reduces (fp16, bf16, fp8
// e4m3/e5m2): round to nearest, ties to even; fp8 conversions saturate to the largest finite value
// as NCCL's float8 types do. Pure functions, thread-safe.
#pragma once

#include <cstdint>

namespace ncclsim {

double halfToDouble(uint16_t h);
uint16_t doubleToHalf(double v);
double bf16ToDouble(uint16_t b);
uint16_t doubleToBf16(double v);
double e4m3ToDouble(uint8_t b);
uint8_t doubleToE4m3(double v);
double e5m2ToDouble(uint8_t b);
uint8_t doubleToE5m2(double v);

}  // namespace ncclsim
