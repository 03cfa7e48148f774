// Helpers shared by the exported nccl* entry points: the error vocabulary (last-error text) and
// the pnccl/nccl pairing of names.
#pragma once

#include <nccl.h>

// Defines `nccl<X>` as a weak alias of `pnccl<X>`, as NCCL does, so a profiler that interposes
// nccl<X> can still reach the implementation through pnccl<X>.
#define NCCLSIM_ALIAS(name)                                            \
  extern "C" __attribute__((weak, alias("p" #name))) decltype(p##name) \
      name;  // NOLINT(bugprone-macro-parentheses): a declarator

namespace ncclsim {

// Records a printf-style message for ncclGetLastError and returns `code`. Thread-safe (the text is
// per thread, as NCCL keeps the last error of the calling thread).
ncclResult_t failWith(ncclResult_t code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

// Device of the calling thread's current (emulated) CUDA context; 0 when there is none.
int currentCudaDevice();

// The calling thread's last error text ("" when none). Valid until the thread's next failure.
const char* lastErrorText();

}  // namespace ncclsim
