// NCCL 2.28.9's own NVTX instrumentation of the collective and point-to-point API calls, so that
// an NVTX tool (libncclscope.so as NVTX_INJECTION64_PATH) sees from the emulated libnccl.so.2 the
// ranges, payloads and schema registrations the real library gives it (docs/emulator.md). Costs a
// flag test and one pointer call per push/pop when no tool is injected (NVTX's own stubs).
#pragma once

#include <nccl.h>

#include <cstddef>

namespace ncclsim {

// The calls NCCL brackets with a payload range, valued as NCCL's static schema ids (NVTX_SID_*);
// the range's schema id is (1 << 24) + this.
enum class NvtxCall : int {
  kAllGather = 4,
  kAllReduce = 5,
  kBroadcast = 6,
  kReduceScatter = 7,
  kReduce = 8,
  kSend = 9,
  kRecv = 10,
  kAlltoAll = 16,
  kGather = 17,
  kScatter = 18,
};

// The range around one API call: pushed by the constructor in the NCCL domain (registering the
// call's schema and name once per process first), popped by the destructor, as NCCL's
// NVTX3_FUNC_WITH_PARAMS does. Nothing when NCCL_NVTX_DISABLE is a nonzero number. `root_or_peer`
// is ignored by calls without one, `op` by calls that do not reduce.
class NvtxApiRange {
 public:
  NvtxApiRange(NvtxCall call, ncclComm_t comm, size_t count, ncclDataType_t dtype, int root_or_peer,
               ncclRedOp_t op) noexcept;
  ~NvtxApiRange();
  NvtxApiRange(const NvtxApiRange&) = delete;
  NvtxApiRange& operator=(const NvtxApiRange&) = delete;

 private:
  bool pushed_ = false;
};

// Registers NCCL's reduction-op enum schema in the NCCL domain, once per process, as NCCL's
// ncclInit does (at the first unique id or communicator creation). Nothing when disabled.
void nvtxInitOnce();

}  // namespace ncclsim
