// The CUDA driver as one table of function pointers, for every part of ncclscope that calls it:
// the probe's completion tracking, its numerics passes, NCCLSCOPE_ACCEL's collectives and the GPU
// check. libcuda.so.1 is found at run time (dlopen, never closed; dlsym of the names cuda.h maps
// each function to), so nothing links against CUDA and the same binary loads on a machine without
// a GPU; tests point a part at a fake by the library path, or hand the part a filled table.
// Loaded once per process and library at the first use that needs it; the hot path only ever
// calls through a table a part already holds (docs/design.md, rules of the in-process library).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>
#include <type_traits>

#include "cuda/driver_functions.h"

namespace ncclscope::cuda {

// The parts that call the driver; each needs the functions driver_functions.h marks with it.
enum DriverUse : unsigned {
  kUseCompletion = 1u << 0,  // the probe's completion tracker
  kUseNumerics = 1u << 1,    // the probe's numerics passes
  kUseAccel = 1u << 2,       // NCCLSCOPE_ACCEL's own collectives
  kUseGpuCheck = 1u << 3,    // ncclscope-gpu-check
};

// One slot per function of driver_functions.h; null where the driver lacks it. A plain value:
// copying it copies the pointers (the library stays loaded for the process).
struct Driver {
#define NCCLSCOPE_CUDA_SLOT(slot, uses, name, fallback, ...) \
  std::add_pointer_t<__VA_ARGS__> slot = nullptr;
  NCCLSCOPE_CUDA_FUNCTIONS(NCCLSCOPE_CUDA_SLOT)
#undef NCCLSCOPE_CUDA_SLOT

  // Whether streams can be captured into graphs and the graphs replayed (a real driver; the
  // emulator has none of these).
  bool HasGraphs() const {
    return stream_begin_capture != nullptr && stream_end_capture != nullptr &&
           graph_instantiate != nullptr && graph_launch != nullptr &&
           graph_exec_destroy != nullptr && graph_destroy != nullptr;
  }
};

// Opens `library` and looks every function of the table up in it, each one the library lacks left
// null. False with *error ("cannot load <library>: <why>") when the library does not open. Loads
// anew on every call (no cache): the shared table below and tests use it. Thread-safe (dlopen is).
bool OpenDriver(const std::string& library, Driver* driver, std::string* error);

// The process's table for `library`, opened at the first call naming it and kept (with the
// library) until the process exits; null with *error when it cannot be opened (tried again at the
// next call). The pointer stays valid for the process. Thread-safe: a lock, held only here, so a
// caller on a hot path keeps what this returns instead of calling it per call.
const Driver* SharedDriver(const std::string& library, std::string* error);

// Whether `driver` has every function `uses` (a set of DriverUse) needs; false with *error naming
// the first one missing ("symbol cuMemAlloc_v2 missing from the CUDA driver"). Pure.
bool Supports(const Driver& driver, unsigned uses, std::string* error);

// The loader of each part: SharedDriver(library), checked with Supports(use), copied into
// *driver. False with *error as theirs; *driver is untouched then. Thread-safe.
bool LoadDriverFor(unsigned use, const std::string& library, Driver* driver, std::string* error);

// The driver's text for `result` and its number ("out of memory (2)"), or "CUresult 2" when the
// driver has no text for it.
// Thread-safe.
std::string ErrorText(const Driver& driver, CUresult result);

}  // namespace ncclscope::cuda
