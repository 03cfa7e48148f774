// The strings NCCL puts in profiler descriptors (ncclFuncToString, ncclDatatypeToString).
#pragma once

#include <nccl.h>

#include "sim/emulator/op_desc.h"

namespace ncclsim {

// Static strings; "Unknown" for a value NCCL has no name for. Thread-safe.
const char* funcName(OpKind k);
const char* dtypeName(ncclDataType_t t);

}  // namespace ncclsim
