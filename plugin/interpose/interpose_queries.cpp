// Interposed pure queries: forwarded, never recorded, and they do not start the probe (a process
// that only asks for the version gets no ring file).
#include <nccl.h>

#include "plugin/core/export.h"
#include "plugin/core/nccl_symbols.h"

namespace {

constexpr const char* kNoNccl = "ncclscope: the NCCL library was not found";

}  // namespace

NCCLSCOPE_API ncclResult_t ncclGetVersion(int* version) {
  return NCCLSCOPE_FORWARD(GetVersion, version)();
}

NCCLSCOPE_API const char* ncclGetErrorString(ncclResult_t result) {
  auto real = NCCLSCOPE_REAL(GetErrorString);
  if (real != nullptr) return real(result);
  ncclscope::plugin::NcclMissing(ncclscope::plugin::NcclFn::kGetErrorString);
  return kNoNccl;
}

NCCLSCOPE_API const char* ncclGetLastError(ncclComm_t comm) {
  auto real = NCCLSCOPE_REAL(GetLastError);
  if (real != nullptr) return real(comm);
  ncclscope::plugin::NcclMissing(ncclscope::plugin::NcclFn::kGetLastError);
  return kNoNccl;
}

NCCLSCOPE_API ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return NCCLSCOPE_FORWARD(CommCount, comm, count)();
}

NCCLSCOPE_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return NCCLSCOPE_FORWARD(CommCuDevice, comm, device)();
}

NCCLSCOPE_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return NCCLSCOPE_FORWARD(CommUserRank, comm, rank)();
}
