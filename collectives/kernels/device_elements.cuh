// The element types ncclscope's reducing kernels load and store (fp16, bf16, fp32, each widened to
// fp32 for arithmetic and narrowed once with round-to-nearest-even, as the CPU twins'
// narrow_float.h), and the 16-byte pack they move: shared by the AllReduce and MoE kernels.
// Included by each kernel source (each its own fatbin).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "collectives/types/accel_types.h"

namespace ncclscope::collectives {
namespace {

struct Fp16 {
  using T = __half;
  static constexpr int kPerPack = 8;
  __device__ static float Load(const T& v) { return __half2float(v); }
  __device__ static T Store(float f) { return __float2half_rn(f); }
};
struct Bf16 {
  using T = __nv_bfloat16;
  static constexpr int kPerPack = 8;
  __device__ static float Load(const T& v) { return __bfloat162float(v); }
  __device__ static T Store(float f) { return __float2bfloat16_rn(f); }
};
struct Fp32 {
  using T = float;
  static constexpr int kPerPack = 4;
  __device__ static float Load(const T& v) { return v; }
  __device__ static T Store(float f) { return f; }
};

union Pack {
  uint4 raw;
  unsigned char bytes[kPackBytes];
};

}  // namespace
}  // namespace ncclscope::collectives
