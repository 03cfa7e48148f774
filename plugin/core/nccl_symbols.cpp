#include "plugin/core/nccl_symbols.h"

#include <dlfcn.h>

#include <cerrno>
#include <string>

#include "plugin/core/warn.h"

namespace ncclscope::plugin {

std::atomic<void*> g_nccl_fns[static_cast<int>(NcclFn::kCount)];

namespace {

constexpr const char* kNames[] = {
#define NCCLSCOPE_NCCL_NAME(name) "nccl" #name,
    NCCLSCOPE_NCCL_FUNCTIONS(NCCLSCOPE_NCCL_NAME)
#undef NCCLSCOPE_NCCL_NAME
};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(NcclFn::kCount));
static_assert(static_cast<int>(NcclFn::kCount) == 40, "nccl.h 2.28 has 40 entry points");

void* SelfBase() {
  static void* base = [] {
    Dl_info info{};
    return dladdr(reinterpret_cast<void*>(&SelfBase), &info) != 0 ? info.dli_fbase : nullptr;
  }();
  return base;
}

// A symbol found in our own object would call us again forever.
bool IsForeign(void* p) {
  if (p == nullptr) return false;
  Dl_info info{};
  return dladdr(p, &info) == 0 || info.dli_fbase != SelfBase();
}

void* FromHandle(void* handle, const char* pname, const char* name) {
  void* p = dlsym(handle, pname);
  if (IsForeign(p)) return p;
  p = dlsym(handle, name);
  return IsForeign(p) ? p : nullptr;
}

void* Find(const char* name) {
  const std::string pname = std::string("p") + name;
  if (void* p = dlsym(RTLD_DEFAULT, pname.c_str()); IsForeign(p)) return p;
  if (void* p = dlsym(RTLD_NEXT, pname.c_str()); IsForeign(p)) return p;
  if (void* p = dlsym(RTLD_NEXT, name); IsForeign(p)) return p;
  if (void* h = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD)) {
    if (void* p = FromHandle(h, pname.c_str(), name)) return p;
  }
  if (void* h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL)) {
    if (void* p = FromHandle(h, pname.c_str(), name)) return p;
  }
  return nullptr;
}

}  // namespace

const char* NcclFnName(NcclFn fn) {
  return kNames[static_cast<int>(fn)];
}

void* ResolveNcclSlow(NcclFn fn) noexcept {
  const int saved_errno = errno;
  void* p = nullptr;
  try {
    p = Find(kNames[static_cast<int>(fn)]);
  } catch (...) {
    p = nullptr;
  }
  if (p != nullptr) g_nccl_fns[static_cast<int>(fn)].store(p, std::memory_order_release);
  errno = saved_errno;
  return p;
}

ncclResult_t NcclMissing(NcclFn fn) noexcept {
  WarnOnce(WarnKey::kNcclMissing,
           "%s: the real NCCL function was not found (is libnccl.so.2 loadable?); returning "
           "ncclSystemError",
           NcclFnName(fn));
  return ncclSystemError;
}

}  // namespace ncclscope::plugin
