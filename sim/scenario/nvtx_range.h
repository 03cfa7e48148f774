// NVTX ranges the scenario runner opens around each step and its phases, as a training loop
// instrumented for Nsight Systems does ("step 12" > "compute" / "collectives"), so the probe's
// NVTX injection is exercised end to end: every record of a rank names its step and phase.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <string>

namespace ncclscope::sim {

// A range of the default domain on the calling thread, from construction to destruction. Without
// an injection (NVTX_INJECTION64_PATH unset) both calls are no-ops.
class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name) { nvtxRangePushA(name.c_str()); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace ncclscope::sim
