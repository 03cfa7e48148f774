// Interposed memory allocation, buffer/window registration and custom reduction operators.
#include <nccl.h>

#include "plugin/core/export.h"
#include "plugin/core/nccl_symbols.h"
#include "plugin/runtime/recorder.h"

namespace ncclscope::plugin {
namespace {

using trace::OpType;

// Fields a caller fills after the real call, from its arguments and results.
struct Extra {
  ncclComm_t comm = nullptr;
  bool has_comm = false;
  uint64_t count = 0;
  uint64_t aux = 0;
  int dtype = -1;
  int redop = -1;
};

// fill(extra, result) runs after the real call so it can read outputs (allocated pointer, op).
template <typename Forward, typename Fill>
ncclResult_t HostCall(OpType op, Forward&& forward, Fill&& fill) noexcept {
  CallFrame f;
  if (!BeginCall(&f)) return forward();
  const ncclResult_t r = forward();
  const int err = errno;
  Extra e;
  fill(&e, r);
  trace::RecordData d = MakeRecord(f, op, r);
  if (e.has_comm) {
    if (CommState* cs = LookupComm(f, e.comm)) d.comm_id = cs->id;
  }
  d.count = e.count;
  d.aux = e.aux;
  d.dtype = e.dtype;
  d.redop = e.redop;
  EmitHostRecord(f, d);
  EndCall(&f, err);
  return r;
}

uint64_t Addr(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

}  // namespace
}  // namespace ncclscope::plugin

using ncclscope::plugin::Addr;
using ncclscope::plugin::Extra;
using ncclscope::plugin::HostCall;
using ncclscope::trace::OpType;

NCCLSCOPE_API ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return HostCall(OpType::kMemAlloc, NCCLSCOPE_FORWARD(MemAlloc, ptr, size),
                  [&](Extra* e, ncclResult_t r) noexcept {
                    e->count = size;
                    e->aux = (r == ncclSuccess && ptr != nullptr) ? Addr(*ptr) : 0;
                  });
}

NCCLSCOPE_API ncclResult_t ncclMemFree(void* ptr) {
  return HostCall(OpType::kMemFree, NCCLSCOPE_FORWARD(MemFree, ptr),
                  [&](Extra* e, ncclResult_t) noexcept { e->aux = Addr(ptr); });
}

NCCLSCOPE_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size,
                                            void** handle) {
  return HostCall(OpType::kCommRegister, NCCLSCOPE_FORWARD(CommRegister, comm, buff, size, handle),
                  [&](Extra* e, ncclResult_t) noexcept {
                    *e = Extra{comm, true, size, Addr(buff)};
                  });
}

NCCLSCOPE_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return HostCall(OpType::kCommDeregister, NCCLSCOPE_FORWARD(CommDeregister, comm, handle),
                  [&](Extra* e, ncclResult_t) noexcept {
                    *e = Extra{comm, true, 0, Addr(handle)};
                  });
}

NCCLSCOPE_API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size,
                                                  ncclWindow_t* win, int winFlags) {
  return HostCall(OpType::kCommWindowRegister,
                  NCCLSCOPE_FORWARD(CommWindowRegister, comm, buff, size, win, winFlags),
                  [&](Extra* e, ncclResult_t) noexcept {
                    *e = Extra{comm, true, size, static_cast<uint32_t>(winFlags)};
                  });
}

NCCLSCOPE_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return HostCall(OpType::kCommWindowDeregister, NCCLSCOPE_FORWARD(CommWindowDeregister, comm, win),
                  [&](Extra* e, ncclResult_t) noexcept {
                    *e = Extra{comm, true, 0, Addr(win)};
                  });
}

NCCLSCOPE_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar,
                                                    ncclDataType_t datatype,
                                                    ncclScalarResidence_t residence,
                                                    ncclComm_t comm) {
  return HostCall(OpType::kRedOpCreatePreMulSum,
                  NCCLSCOPE_FORWARD(RedOpCreatePreMulSum, op, scalar, datatype, residence, comm),
                  [&](Extra* e, ncclResult_t r) noexcept {
                    *e = Extra{
                        comm,     true,
                        0,        static_cast<uint32_t>(residence),
                        datatype, (r == ncclSuccess && op != nullptr) ? static_cast<int>(*op) : -1};
                  });
}

NCCLSCOPE_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return HostCall(OpType::kRedOpDestroy, NCCLSCOPE_FORWARD(RedOpDestroy, op, comm),
                  [&](Extra* e, ncclResult_t) noexcept {
                    *e = Extra{comm, true, 0, 0, -1, static_cast<int>(op)};
                  });
}
