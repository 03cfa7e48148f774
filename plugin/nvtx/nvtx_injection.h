// libncclscope.so as an NVTX injection library (NVTX_INJECTION64_PATH): what the rest of the probe
// may ask of it.
#pragma once

#include <cstddef>

namespace ncclscope::plugin {

// Puts a mark in the "ncclscope" domain of the forwarded NVTX tool (Nsight Systems, say), so a
// verdict shows on its timeline; nothing when no tool is forwarded to. Not for a hot path (the
// first call creates the domain). Thread-safe.
void NvtxMarkVerdict(const char* text) noexcept;

}  // namespace ncclscope::plugin
