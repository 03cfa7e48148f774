#include "trace/record.h"

namespace ncclscope::trace {

const char* OpTypeName(OpType op) {
  switch (op) {
    case OpType::kUnknown:
      return "unknown";
    case OpType::kAllReduce:
      return "allreduce";
    case OpType::kBroadcast:
      return "broadcast";
    case OpType::kReduce:
      return "reduce";
    case OpType::kAllGather:
      return "allgather";
    case OpType::kReduceScatter:
      return "reducescatter";
    case OpType::kAlltoAll:
      return "alltoall";
    case OpType::kGather:
      return "gather";
    case OpType::kScatter:
      return "scatter";
    case OpType::kSend:
      return "send";
    case OpType::kRecv:
      return "recv";
    case OpType::kGroupStart:
      return "group_start";
    case OpType::kGroupEnd:
      return "group_end";
    case OpType::kGroupSimulateEnd:
      return "group_simulate_end";
    case OpType::kGetUniqueId:
      return "get_unique_id";
    case OpType::kCommInitRank:
      return "comm_init_rank";
    case OpType::kCommInitRankConfig:
      return "comm_init_rank_config";
    case OpType::kCommInitAll:
      return "comm_init_all";
    case OpType::kCommInitRankScalable:
      return "comm_init_rank_scalable";
    case OpType::kCommSplit:
      return "comm_split";
    case OpType::kCommShrink:
      return "comm_shrink";
    case OpType::kCommFinalize:
      return "comm_finalize";
    case OpType::kCommDestroy:
      return "comm_destroy";
    case OpType::kCommAbort:
      return "comm_abort";
    case OpType::kCommRevoke:
      return "comm_revoke";
    case OpType::kCommRegister:
      return "comm_register";
    case OpType::kCommDeregister:
      return "comm_deregister";
    case OpType::kCommWindowRegister:
      return "comm_window_register";
    case OpType::kCommWindowDeregister:
      return "comm_window_deregister";
    case OpType::kMemAlloc:
      return "mem_alloc";
    case OpType::kMemFree:
      return "mem_free";
    case OpType::kRedOpCreatePreMulSum:
      return "redop_create_premulsum";
    case OpType::kRedOpDestroy:
      return "redop_destroy";
    case OpType::kCommGetAsyncError:
      return "comm_get_async_error";
    case OpType::kProfilerAttach:
      return "profiler_attach";
    case OpType::kDeviceStart:
      return "device_start";
    case OpType::kP2pDeviceStart:
      return "p2p_device_start";
    case OpType::kProxyProgress:
      return "proxy_progress";
    case OpType::kKernelChannels:
      return "kernel_channels";
    case OpType::kProfilerMask:
      return "profiler_mask";
    case OpType::kDeviceCompute:
      return "device_compute";
    case OpType::kDeviceActivityLoss:
      return "device_activity_loss";
    case OpType::kNvtxPhaseName:
      return "nvtx_phase_name";
    case OpType::kNvtxRangeName:
      return "nvtx_range_name";
    case OpType::kAccelStall:
      return "accel_stall";
    case OpType::kNumerics:
      return "numerics";
    case OpType::kEventDuration:
      return "event_duration";
  }
  return "unknown";
}

bool IsCollective(OpType op) {
  return op >= OpType::kAllReduce && op <= OpType::kScatter;
}

bool IsP2P(OpType op) {
  return op == OpType::kSend || op == OpType::kRecv;
}

bool IsProbeWritten(OpType op) {
  switch (op) {
    case OpType::kProfilerAttach:
    case OpType::kDeviceStart:
    case OpType::kP2pDeviceStart:
    case OpType::kProxyProgress:
    case OpType::kKernelChannels:
    case OpType::kProfilerMask:
    case OpType::kDeviceCompute:
    case OpType::kDeviceActivityLoss:
    case OpType::kNvtxPhaseName:
    case OpType::kNvtxRangeName:
    case OpType::kAccelStall:
    case OpType::kNumerics:
    case OpType::kEventDuration:
      return true;
    default:
      return false;
  }
}

}  // namespace ncclscope::trace
