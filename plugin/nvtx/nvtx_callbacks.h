// The NVTX callbacks the injection installs in each NVTX instance of the process (CORE: the
// default domain's ranges; CORE2: domains, registered strings, domain ranges), and the forwarded
// tool's functions they call on.
#pragma once

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

namespace ncclscope::plugin {

// Functions of the forwarded tool (NCCLSCOPE_NVTX_FORWARD) that the callbacks call after recording;
// null when no tool is forwarded to or it left the slot empty. Written while the injection starts
// (before the callbacks are installed), read-only afterwards.
struct NvtxNext {
  nvtxRangePushA_impl_fntype push_a;
  nvtxRangePushW_impl_fntype push_w;
  nvtxRangePushEx_impl_fntype push_ex;
  nvtxRangePop_impl_fntype pop;
  nvtxRangeStartA_impl_fntype start_a;
  nvtxRangeStartW_impl_fntype start_w;
  nvtxRangeStartEx_impl_fntype start_ex;
  nvtxRangeEnd_impl_fntype end;
  nvtxDomainRangePushEx_impl_fntype domain_push;
  nvtxDomainRangePop_impl_fntype domain_pop;
  nvtxDomainRangeStartEx_impl_fntype domain_start;
  nvtxDomainRangeEnd_impl_fntype domain_end;
  nvtxDomainRegisterStringA_impl_fntype register_a;
  nvtxDomainRegisterStringW_impl_fntype register_w;
  nvtxDomainCreateA_impl_fntype create_a;
  nvtxDomainCreateW_impl_fntype create_w;
  nvtxDomainMarkEx_impl_fntype domain_mark;  // not wrapped: only for ncclscope's own marks
};
extern NvtxNext g_nvtx_next __attribute__((visibility("hidden")));

// One wrapped slot: the callback id and our function.
struct NvtxHook {
  unsigned cbid;
  NvtxFunctionPointer fn;
  NvtxFunctionPointer* next;  // where the tool's function for this slot is kept (in g_nvtx_next)
};

// The hooks of a module (NVTX_CB_MODULE_CORE or _CORE2) and their count. Thread-safe.
const NvtxHook* NvtxHooks(NvtxCallbackModule module, unsigned* count);

}  // namespace ncclscope::plugin
