// Exported entry points that need no peers: version, ids, errors, groups, reduction operators,
// memory and buffer/window registration (host memory here, so registration is bookkeeping only).
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "sim/emulator/api_support.h"
#include "sim/emulator/comm.h"
#include "sim/emulator/group.h"
#include "sim/emulator/nvtx_ranges.h"

using ncclsim::failWith;

namespace {

// Registration handles only need to be distinct, non-NULL and releasable.
struct Registration {
  void* buff;
  size_t size;
};

constexpr unsigned kSimInfoMagic = 0x74685283;

}  // namespace

extern "C" {

ncclResult_t pncclGetVersion(int* version) {
  if (version == nullptr) return failWith(ncclInvalidArgument, "version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId) {
  ncclsim::nvtxInitOnce();  // NCCL: ncclGetUniqueId -> ncclInit
  if (uniqueId == nullptr) return failWith(ncclInvalidArgument, "uniqueId is NULL");
  *uniqueId = ncclsim::makeUniqueId();
  return ncclSuccess;
}

const char* pncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error";
    case ncclSystemError:
      return "unhandled system error";
    case ncclInternalError:
      return "internal error";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclInvalidUsage:
      return "invalid usage";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "operation in progress";
    default:
      return "unknown result code";
  }
}

const char* pncclGetLastError(ncclComm_t comm) {
  return ncclsim::lastErrorText();
}

void pncclResetDebugInit() {}

ncclResult_t pncclGroupStart() {
  ncclsim::groupStart();
  return ncclSuccess;
}

ncclResult_t pncclGroupEnd() {
  ncclResult_t r = ncclsim::groupEnd();
  return r == ncclSuccess ? r : failWith(r, "ncclGroupEnd without ncclGroupStart");
}

ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  if (simInfo != nullptr && simInfo->magic != kSimInfoMagic) {
    return failWith(ncclInvalidArgument, "simInfo not initialized with NCCL_SIM_INFO_INITIALIZER");
  }
  ncclResult_t r = ncclsim::groupSimulateEnd(simInfo ? &simInfo->estimatedTime : nullptr);
  return r == ncclSuccess ? r : failWith(r, "ncclGroupSimulateEnd without ncclGroupStart");
}

ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm) {
  if (op == nullptr || scalar == nullptr || comm == nullptr) {
    return failWith(ncclInvalidArgument, "NULL argument");
  }
  size_t size = ncclsim::dtypeSize(datatype);
  if (size == 0) return failWith(ncclInvalidArgument, "invalid datatype %d", int(datatype));
  ncclsim::CustomRedOp r;
  r.live = true;
  r.dtype = datatype;
  r.device_scalar = residence == ncclScalarDevice;
  r.scalar_ptr = scalar;
  std::memcpy(r.scalar, scalar, size);
  std::lock_guard<std::mutex> lock(comm->issue_mu);
  size_t idx = 0;
  while (idx < comm->redops.size() && comm->redops[idx].live) ++idx;
  if (idx == comm->redops.size()) comm->redops.push_back(r);
  comm->redops[idx] = r;
  *op = static_cast<ncclRedOp_t>(int(ncclNumOps) + int(idx));
  return ncclSuccess;
}

ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  if (comm == nullptr) return failWith(ncclInvalidArgument, "communicator is NULL");
  std::lock_guard<std::mutex> lock(comm->issue_mu);
  size_t idx = size_t(int(op) - int(ncclNumOps));
  if (int(op) < int(ncclNumOps) || idx >= comm->redops.size() || !comm->redops[idx].live) {
    return failWith(ncclInvalidArgument, "invalid reduction operator %d", int(op));
  }
  comm->redops[idx].live = false;
  return ncclSuccess;
}

ncclResult_t pncclMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return failWith(ncclInvalidArgument, "ptr is NULL");
  size_t rounded = (size + 4095) / 4096 * 4096;
  *ptr = std::aligned_alloc(4096, rounded == 0 ? 4096 : rounded);
  return *ptr ? ncclSuccess : failWith(ncclSystemError, "out of memory allocating %zu bytes", size);
}

ncclResult_t pncclMemFree(void* ptr) {
  std::free(ptr);
  return ncclSuccess;
}

ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  if (comm == nullptr || handle == nullptr) return failWith(ncclInvalidArgument, "NULL argument");
  *handle = new Registration{buff, size};
  return ncclSuccess;
}

ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle) {
  if (comm == nullptr || handle == nullptr) return failWith(ncclInvalidArgument, "NULL argument");
  delete static_cast<Registration*>(handle);
  return ncclSuccess;
}

ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                     int winFlags) {
  if (comm == nullptr || win == nullptr) return failWith(ncclInvalidArgument, "NULL argument");
  *win = reinterpret_cast<ncclWindow_t>(new Registration{buff, size});
  return ncclSuccess;
}

ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  if (comm == nullptr || win == nullptr) return failWith(ncclInvalidArgument, "NULL argument");
  delete reinterpret_cast<Registration*>(win);
  return ncclSuccess;
}

}  // extern "C"

NCCLSIM_ALIAS(ncclGetVersion)
NCCLSIM_ALIAS(ncclGetUniqueId)
NCCLSIM_ALIAS(ncclGetErrorString)
NCCLSIM_ALIAS(ncclGetLastError)
// Deprecated in nccl.h, still exported by NCCL.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
NCCLSIM_ALIAS(ncclResetDebugInit)
#pragma GCC diagnostic pop
NCCLSIM_ALIAS(ncclGroupStart)
NCCLSIM_ALIAS(ncclGroupEnd)
NCCLSIM_ALIAS(ncclGroupSimulateEnd)
NCCLSIM_ALIAS(ncclRedOpCreatePreMulSum)
NCCLSIM_ALIAS(ncclRedOpDestroy)
NCCLSIM_ALIAS(ncclMemAlloc)
NCCLSIM_ALIAS(ncclMemFree)
NCCLSIM_ALIAS(ncclCommRegister)
NCCLSIM_ALIAS(ncclCommDeregister)
NCCLSIM_ALIAS(ncclCommWindowRegister)
NCCLSIM_ALIAS(ncclCommWindowDeregister)
