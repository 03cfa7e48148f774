// The strings NCCL's profiler events carry for the function and the data type, mapped back to
// the values the ring stores. The names are NCCL's ncclFuncToString / ncclDatatypeToString
// (src/collectives.cc, 2.28.9). Pure functions: no allocation, no lock.
#pragma once

#include <cstdint>

#include "trace/record.h"

namespace ncclscope::plugin::plugin_only {

// "AllReduce", "Send", ... as OpType; kUnknown for null or any other name ("SendRecv",
// "PutSignal", "Invalid").
trace::OpType OpOfFunc(const char* func) noexcept;

// "ncclFloat32", ... as ncclDataType_t; -1 for null or any other name. NCCL 2.28.9 names
// ncclUint8 "Unknown", so it reads as -1 here.
int32_t DtypeOfName(const char* name) noexcept;

// Whether the op's record carries a root (peer field) as the interposer's does.
bool IsRooted(trace::OpType op) noexcept;

}  // namespace ncclscope::plugin::plugin_only
