#include "collectives/numerics/numerics_scan.h"

namespace ncclscope::collectives {

bool NumericFormatOf(int32_t nccl_dtype, NumericFormat* out) noexcept {
  // nccl.h (v2.28): ncclInt8 0, ncclUint8 1, ncclInt32 2, ncclUint32 3, ncclInt64 4,
  // ncclUint64 5, ncclFloat16 6, ncclFloat32 7, ncclFloat64 8, ncclBfloat16 9,
  // ncclFloat8e4m3 10, ncclFloat8e5m2 11.
  switch (nccl_dtype) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
      *out = NumericFormat::kInteger;
      return true;
    case 6:
      *out = NumericFormat::kFp16;
      return true;
    case 7:
      *out = NumericFormat::kFp32;
      return true;
    case 8:
      *out = NumericFormat::kFp64;
      return true;
    case 9:
      *out = NumericFormat::kBf16;
      return true;
    case 10:
      *out = NumericFormat::kFp8E4m3;
      return true;
    case 11:
      *out = NumericFormat::kFp8E5m2;
      return true;
    default:
      return false;
  }
}

const char* NumericFormatName(NumericFormat f) noexcept {
  switch (f) {
    case NumericFormat::kInteger:
      return "integer";
    case NumericFormat::kFp16:
      return "fp16";
    case NumericFormat::kFp32:
      return "fp32";
    case NumericFormat::kFp64:
      return "fp64";
    case NumericFormat::kBf16:
      return "bf16";
    case NumericFormat::kFp8E4m3:
      return "fp8e4m3";
    case NumericFormat::kFp8E5m2:
      return "fp8e5m2";
  }
  return "unknown";
}

}  // namespace ncclscope::collectives
