// The names Flight Recorder writes for operations and dtypes, and their NCCL equivalents: the one
// table both directions read (importing dumps, and writing dumps from ring files).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trace/record.h"

namespace ncclscope::flight_recorder {

// What an entry's profiling_name ("nccl:all_reduce", "nccl:send 1->0", "nccl:coalesced", ...)
// says. The backend prefix ("nccl:", "xccl:", "nccl2:", ...) is ignored.
struct FrOpName {
  trace::OpType op = trace::OpType::kUnknown;  // kUnknown: not an operation this table knows
  // send/recv only: the two group-local ranks the name carries ("send A->B", "recv B<-A").
  int self = -1;
  int peer = -1;
  // The entry that closes a coalesced group ("nccl:coalesced", "nccl:ALLGATHER_coalesced", ...):
  // op is the group's operation when the name says it, else kUnknown.
  bool closes_coalesced = false;
};
FrOpName ParseProfilingName(std::string_view name);

// The profiling_name torch writes for `op` (collectives and send/recv; "nccl:" prefix); for
// send/recv `self` and `peer` are the group-local ranks. "" for operations torch never records.
std::string ProfilingNameOf(trace::OpType op, int self = -1, int peer = -1);

// ncclDataType_t of a torch dtype name ("Float", "BFloat16", ...); -1 when unknown (Bool maps to
// ncclUint8 as ProcessGroupNCCL sends it).
int32_t NcclDtypeOfTorchName(std::string_view name);
// The torch name of an ncclDataType_t ("Float" for ncclFloat32); "" when unknown.
const char* TorchNameOfNcclDtype(int32_t nccl_dtype);

}  // namespace ncclscope::flight_recorder
