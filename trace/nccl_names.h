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
// "sum", "prod", "max", "min", "avg", "premulsum<N>" for user-created ops, "-" for -1.
std::string RedOpName(int32_t redop);
// "success", "system_error", ...; "in_call" for kResultInCall; "result<N>" for unknown values.
std::string ResultName(int32_t result);

}  // namespace ncclscope::trace
