// NVTX contexts in synthetic jobs: the reserved word of a call made in (step, context) and the
// name records the probe writes before a context's first use (trace/record.h, "NVTX context").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/record.h"
#include "trace/trace_set.h"

namespace ncclscope::testing {

struct NvtxContextName {
  uint32_t id = 0;
  std::string phase;
  std::string range;
};

// The reserved word of a call made in `step` and context `id`, as the probe writes it.
inline uint32_t NvtxWord(uint64_t step, uint32_t id) {
  return trace::NvtxReservedWord(trace::NvtxStepField(step), id);
}

// Puts the name records of `names` first in every file of the set, as the probe writes them
// before their first use; later records keep their order, their indices move up.
void AddNameRecords(trace::TraceSet* set, const std::vector<NvtxContextName>& names);

}  // namespace ncclscope::testing
