#include "collectives/types/accel_types.h"

namespace ncclscope::collectives {

bool DtypeOf(int32_t nccl_dtype, Dtype* out) noexcept {
  switch (nccl_dtype) {
    case static_cast<int32_t>(Dtype::kFp16):
    case static_cast<int32_t>(Dtype::kFp32):
    case static_cast<int32_t>(Dtype::kBf16):
      *out = static_cast<Dtype>(nccl_dtype);
      return true;
    default:
      return false;
  }
}

size_t DtypeBytes(Dtype d) noexcept {
  return d == Dtype::kFp32 ? 4 : 2;
}

const char* DtypeName(Dtype d) noexcept {
  switch (d) {
    case Dtype::kFp16:
      return "fp16";
    case Dtype::kFp32:
      return "fp32";
    case Dtype::kBf16:
      return "bf16";
  }
  return "?";
}

const char* AlgorithmName(Algorithm a) noexcept {
  switch (a) {
    case Algorithm::kNccl:
      return "nccl";
    case Algorithm::kOneShot:
      return "one-shot";
    case Algorithm::kTwoShot:
      return "two-shot";
    case Algorithm::kPull:
      return "pull";
    case Algorithm::kExchange:
      return "exchange";
  }
  return "?";
}

}  // namespace ncclscope::collectives
