// The numbers NCCL's API gives its data types (ncclDataType_t) and reduction operations
// (ncclRedOp_t), as the planner receives them in a call (nccl.h of NCCL v2.28.9-1).
#pragma once

#include <cstdint>

namespace ncclscope::collectives {

constexpr int32_t kNcclInt8 = 0, kNcclInt32 = 2, kNcclFp16 = 6, kNcclFp32 = 7, kNcclFp64 = 8,
                  kNcclBf16 = 9;
constexpr int32_t kNcclSum = 0, kNcclMax = 2;

}  // namespace ncclscope::collectives
