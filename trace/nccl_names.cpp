#include "trace/nccl_names.h"

#include <array>

namespace ncclscope::trace {
namespace {

struct TypeInfo {
  const char* name;
  int size;
};
// Indexed by ncclDataType_t.
constexpr std::array<TypeInfo, 12> kTypes = {{{"int8", 1},
                                              {"uint8", 1},
                                              {"int32", 4},
                                              {"uint32", 4},
                                              {"int64", 8},
                                              {"uint64", 8},
                                              {"float16", 2},
                                              {"float32", 4},
                                              {"float64", 8},
                                              {"bfloat16", 2},
                                              {"float8e4m3", 1},
                                              {"float8e5m2", 1}}};
// Indexed by ncclRedOp_t; values from ncclNumOps (5) on are created by ncclRedOpCreatePreMulSum.
constexpr std::array<const char*, 5> kRedOps = {"sum", "prod", "max", "min", "avg"};
// Indexed by ncclResult_t.
constexpr std::array<const char*, 8> kResults = {
    "success",          "unhandled_cuda_error", "system_error", "internal_error",
    "invalid_argument", "invalid_usage",        "remote_error", "in_progress"};

}  // namespace

std::string DataTypeName(int32_t dtype) {
  if (dtype == -1) return "-";
  if (dtype >= 0 && dtype < static_cast<int32_t>(kTypes.size())) return kTypes[dtype].name;
  return "dtype" + std::to_string(dtype);
}

int DataTypeSize(int32_t dtype) {
  if (dtype >= 0 && dtype < static_cast<int32_t>(kTypes.size())) return kTypes[dtype].size;
  return 0;
}

std::string RedOpName(int32_t redop) {
  if (redop == -1) return "-";
  if (redop < -1) return "redop" + std::to_string(redop);
  if (redop < static_cast<int32_t>(kRedOps.size())) return kRedOps[redop];
  return "premulsum" + std::to_string(redop);
}

std::string RedOpText(int32_t redop) {
  if (redop < static_cast<int32_t>(kRedOps.size())) return RedOpName(redop);
  // NCCL numbers created ops per communicator from ncclNumOps on: the number identifies the op
  // only together with its communicator, and ranks may number the same op differently.
  return "premulsum (ncclRedOpCreatePreMulSum #" + std::to_string(redop) + ")";
}

std::string ResultName(int32_t result) {
  if (result == -1) return "in_call";  // trace::kResultInCall
  if (result >= 0 && result < static_cast<int32_t>(kResults.size())) return kResults[result];
  return "result" + std::to_string(result);
}

}  // namespace ncclscope::trace
