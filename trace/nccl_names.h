// Names of NCCL's enum values as ncclscope prints them. Values are NCCL's (nccl.h); trace/ does not
// include nccl.h so that readers build without the CUDA toolkit. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace ncclscope::trace {

// "float32", "bfloat16", ...; "-" for -1; "dtype<N>" for values this build does not know.
std::string DataTypeName(int32_t dtype);
// Bytes per element, 0 when unknown.
int DataTypeSize(int32_t dtype);
// "sum", "prod", "max", "min", "avg", "premulsum<N>" for user-created ops, "-" for -1,
// "redop<N>" for negative values NCCL never hands out. A short token for JSON and comparisons.
std::string RedOpName(int32_t redop);
// RedOpName for people: an op created at run time also says where its number comes from,
// "premulsum (ncclRedOpCreatePreMulSum #5)".
std::string RedOpText(int32_t redop);
// "success", "system_error", ...; "in_call" for kResultInCall; "result<N>" for unknown values.
std::string ResultName(int32_t result);

}  // namespace ncclscope::trace
