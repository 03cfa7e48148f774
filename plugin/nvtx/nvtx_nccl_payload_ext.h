// The NVTX payload extension as libncclscope.so serves it, so that NCCL's schema registrations and
// its nvtxRangePopPayload reach the injection (nvtx_nccl_payload.h says why both matter).
//
// NVTX initializes each extension module of each instance on its first use, through the
// injection's InitializeInjectionNvtxExtension (nvtx3/nvtxDetail/nvtxExtInit.h, nvtxExtInitOnce),
// handing over the module's function slots. ncclscope lets the forwarded tool (Nsight Systems)
// fill them first, keeps the schema-register and pop-with-payload functions it installed, and
// puts its own in those two slots, which record and then call the tool's. Every other slot stays
// the tool's (or disabled without a tool): marks, push/start with payload, enums, counters.
#pragma once

namespace ncclscope::plugin {

using NvtxExtensionInit = int (*)(void* module_info);

// InitializeInjectionNvtxExtension's work for one module (an nvtxExtModuleInfo_t*): forwards to
// `forward` (may be null) and, when `record` and the module is the payload extension of a version
// whose layout ncclscope knows (compat ids 0x0103: NCCL 2.28.9's headers; 0x0104: CUDA 13.0's),
// installs the two functions. A tool that returns 0 leaves nothing of its own in the slots.
// Returns what NVTX expects: non-zero when any function was installed. Cold path; thread-safe.
int AttachNvtxExtension(void* module_info, NvtxExtensionInit forward, bool record) noexcept;

}  // namespace ncclscope::plugin
