// Finds the real NCCL entry points behind our interposed nccl* symbols, lazily at first use, so a
// libnccl dlopen'ed after process start still works.
#pragma once

#include <nccl.h>

#include <atomic>

namespace ncclscope::plugin {

// The 40 entry points of nccl.h 2.28, in the order of the NcclFn enum.
// clang-format off
#define NCCLSCOPE_NCCL_FUNCTIONS(X) \
  X(AllGather) \
  X(AllReduce) \
  X(AlltoAll) \
  X(Bcast) \
  X(Broadcast) \
  X(CommAbort) \
  X(CommCount) \
  X(CommCuDevice) \
  X(CommDeregister) \
  X(CommDestroy) \
  X(CommFinalize) \
  X(CommGetAsyncError) \
  X(CommInitAll) \
  X(CommInitRank) \
  X(CommInitRankConfig) \
  X(CommInitRankScalable) \
  X(CommRegister) \
  X(CommRevoke) \
  X(CommShrink) \
  X(CommSplit) \
  X(CommUserRank) \
  X(CommWindowDeregister) \
  X(CommWindowRegister) \
  X(Gather) \
  X(GetErrorString) \
  X(GetLastError) \
  X(GetUniqueId) \
  X(GetVersion) \
  X(GroupEnd) \
  X(GroupSimulateEnd) \
  X(GroupStart) \
  X(MemAlloc) \
  X(MemFree) \
  X(Recv) \
  X(RedOpCreatePreMulSum) \
  X(RedOpDestroy) \
  X(Reduce) \
  X(ReduceScatter) \
  X(Scatter) \
  X(Send)
// clang-format on

enum class NcclFn : int {
#define NCCLSCOPE_NCCL_ENUM(name) k##name,
  NCCLSCOPE_NCCL_FUNCTIONS(NCCLSCOPE_NCCL_ENUM)
#undef NCCLSCOPE_NCCL_ENUM
      kCount
};

// "ncclAllReduce". Thread-safe; static storage.
const char* NcclFnName(NcclFn fn);

// Resolved addresses; null until found. Written only by ResolveNcclSlow.
extern std::atomic<void*> g_nccl_fns[static_cast<int>(NcclFn::kCount)];

// Tries, in order: pnccl<Name> in the global scope and after us (RTLD_DEFAULT, RTLD_NEXT),
// nccl<Name> after us (RTLD_NEXT), then both names in libnccl.so.2 if already loaded (RTLD_NOLOAD,
// covers an RTLD_LOCAL load), then in libnccl.so.2 opened by us. Never returns one of our own
// functions. Returns null when not found (and retries next time). Thread-safe; keeps errno.
void* ResolveNcclSlow(NcclFn fn) noexcept;

// Hot path: one acquire load once resolved. Thread-safe.
inline void* NcclFnPtr(NcclFn fn) noexcept {
  void* p = g_nccl_fns[static_cast<int>(fn)].load(std::memory_order_acquire);
  return p != nullptr ? p : ResolveNcclSlow(fn);
}

// What an entry point returns when the real function cannot be found: ncclSystemError, after one
// warning. Thread-safe; keeps errno.
ncclResult_t NcclMissing(NcclFn fn) noexcept;

// The pnccl<Name> pointer type checked against nccl.h's declaration.
#define NCCLSCOPE_REAL(name)                  \
  reinterpret_cast<decltype(&::pnccl##name)>( \
      ::ncclscope::plugin::NcclFnPtr(::ncclscope::plugin::NcclFn::k##name))

// Calls the real function, or returns NcclMissing's result when there is none.
#define NCCLSCOPE_FORWARD(name, ...)                                                     \
  ([&]() noexcept -> ncclResult_t {                                                      \
    auto real_fn = NCCLSCOPE_REAL(name);                                                 \
    return real_fn != nullptr                                                            \
               ? real_fn(__VA_ARGS__)                                                    \
               : ::ncclscope::plugin::NcclMissing(::ncclscope::plugin::NcclFn::k##name); \
  })

}  // namespace ncclscope::plugin
