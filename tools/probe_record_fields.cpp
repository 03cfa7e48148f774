#include "tools/probe_record_fields.h"

#include <fmt/format.h>

#include "trace/nccl_names.h"
#include "trace/numerics_record.h"

namespace ncclscope::tools {
namespace {

using trace::OpType;

OpType OpOf(const trace::RecordData& r) {
  return static_cast<OpType>(r.op);
}

// The operation a proxy_progress or kernel_channels record is about: its OpType in stream's high
// half; device_compute and p2p_device_start keep it in redop.
std::string OperationName(uint64_t op_type) {
  return trace::OpTypeName(static_cast<OpType>(op_type));
}

const char* MaskWhy(uint64_t why) {
  switch (why) {
    case trace::kMaskWhyStart:
      return "configuration";
    case trace::kMaskWhySuspect:
      return "suspect";
    case trace::kMaskWhyResolved:
      return "resolved";
    default:
      return "unknown";
  }
}

struct ProxyCounts {
  uint64_t posted, done, sent, received, steps;
  bool send, ended;
};

ProxyCounts ProxyCountsOf(const trace::RecordData& r) {
  return {r.count >> 32,
          r.count & 0xffffffffu,
          r.aux >> 32,
          r.aux & 0xffffffffu,
          (r.stream >> 8) & 0xffffffu,
          (r.stream & trace::kProxySend) != 0,
          (r.stream & trace::kProxyEnded) != 0};
}

// The barrier of an accel_stall record (collectives/planner/epoch.h: 0 start, 1 middle, 2 end).
const char* BarrierName(int32_t barrier) {
  return barrier == 0 ? "start" : barrier == 1 ? "middle" : barrier == 2 ? "end" : "?";
}

}  // namespace

std::string ProxyStateName(uint32_t state) {
  // The values of NCCL's ncclProfilerEventState_t for proxy steps (stable across plugin versions).
  switch (state) {
    case 0:
      return "none";
    case 8:
      return "SendGPUWait";
    case 9:
      return "SendWait";
    case 10:
      return "RecvWait";
    case 11:
      return "RecvFlushWait";
    case 12:
      return "RecvGPUWait";
    case 20:
      return "SendPeerWait";
    default:
      return fmt::format("state{}", state);
  }
}

std::string NumericsText(const trace::NumericsSample& s) {
  std::string text = fmt::format(" {} seq={} dtype={}", OperationName(static_cast<uint32_t>(s.op)),
                                 s.seq, trace::DataTypeName(s.dtype));
  if (s.scanned) {
    text += fmt::format(" input_nan={} input_inf={}", s.nan_count, s.inf_count);
    if (s.first_nonfinite != trace::kNumericsNone) {
      text += fmt::format(" first_nonfinite={}", s.first_nonfinite);
    }
  }
  if (s.hashed) {
    text += fmt::format(" output_hash={:016x} hashed_bytes={} hash_version={}", s.hash,
                        s.hash_bytes, s.hash_version);
  }
  return text;
}

// The passes not done are absent, not zero: a missing count says nothing either way.
void AddNumericsJson(const trace::NumericsSample& s, nlohmann::json* out) {
  nlohmann::json& j = *out;
  j["operation"] = OperationName(static_cast<uint32_t>(s.op));
  j["data_type"] = trace::DataTypeName(s.dtype);
  if (s.scanned) {
    j["input_nan"] = s.nan_count;
    j["input_inf"] = s.inf_count;
    if (s.first_nonfinite != trace::kNumericsNone) j["first_nonfinite"] = s.first_nonfinite;
  }
  if (s.hashed) {
    j["output_hash"] = fmt::format("{:016x}", s.hash);
    j["hashed_bytes"] = s.hash_bytes;
    j["hash_version"] = s.hash_version;
  }
}

bool IsProbeEventRecord(const trace::RecordData& r) {
  // Attach records and NVTX names print as other records do.
  const OpType op = OpOf(r);
  return trace::IsProbeWritten(op) && op != OpType::kProfilerAttach &&
         op != OpType::kNvtxPhaseName && op != OpType::kNvtxRangeName;
}

std::string ProbeFieldsText(const trace::RecordData& r) {
  switch (OpOf(r)) {
    case OpType::kDeviceStart:
      return fmt::format(" seq={} nccl_seq={} channel={} gpu_start={}", r.seq, r.count, r.peer,
                         r.aux);
    case OpType::kP2pDeviceStart:
      return fmt::format(" {} seq={} peer={} channel={} gpu_start={}",
                         OperationName(static_cast<uint32_t>(r.redop)), r.seq, r.peer, r.dtype,
                         r.aux);
    case OpType::kProxyProgress: {
      const ProxyCounts p = ProxyCountsOf(r);
      return fmt::format(
          " {} seq={} {} peer={} channel={} state={} steps={} posted={} sent={} received={} "
          "done={}{}",
          OperationName(r.stream >> 32), r.seq, p.send ? "send" : "recv", r.peer, r.dtype,
          ProxyStateName(static_cast<uint32_t>(r.redop)), p.steps, p.posted, p.sent, p.received,
          p.done, p.ended ? " ended" : "");
    }
    case OpType::kKernelChannels:
      return fmt::format(" {} seq={} channels_started={:#x} channels_stopped={:#x}",
                         OperationName(r.stream >> 32), r.seq, r.aux, r.count);
    case OpType::kProfilerMask:
      return fmt::format(" mask={:#x} why={}", r.aux, MaskWhy(r.count));
    case OpType::kDeviceCompute:
      return fmt::format(" launched_by={} seq={} compute_ns={} compute_kernels={}{}",
                         OperationName(static_cast<uint32_t>(r.redop)), r.seq, r.count, r.peer,
                         r.recv_buffer == 0 ? " compute=unknown" : "");
    case OpType::kDeviceActivityLoss:
      return fmt::format(" lost={} why={}", r.count,
                         r.aux == 1 ? "cupti-dropped" : "correlation-unknown");
    case OpType::kAccelStall:
      return fmt::format(" seq={} waited_for={} block={} barrier={} epoch={} flag={}", r.seq,
                         r.peer, r.dtype, BarrierName(r.redop), r.count, r.aux);
    case OpType::kNumerics:
      return NumericsText(trace::DecodeNumerics(r));
    default:
      return "";
  }
}

void AddProbeFieldsJson(const trace::RecordData& r, nlohmann::json* out) {
  nlohmann::json& j = *out;
  switch (OpOf(r)) {
    case OpType::kDeviceStart:
      j["nccl_seq"] = r.count;
      j["channel"] = r.peer;
      j["gpu_start_ns"] = r.aux;
      break;
    case OpType::kP2pDeviceStart:
      j["operation"] = OperationName(static_cast<uint32_t>(r.redop));
      j["channel"] = r.dtype;
      j["gpu_start_ns"] = r.aux;
      break;
    case OpType::kProxyProgress: {
      const ProxyCounts p = ProxyCountsOf(r);
      j["operation"] = OperationName(r.stream >> 32);
      j["side"] = p.send ? "send" : "recv";
      j["channel"] = r.dtype;
      j["state"] = ProxyStateName(static_cast<uint32_t>(r.redop));
      j["state_since_ns"] = r.group_id;
      j["steps"] = p.steps;
      j["posted"] = p.posted;
      j["sent"] = p.sent;
      j["received"] = p.received;
      j["done"] = p.done;
      j["ended"] = p.ended;
      break;
    }
    case OpType::kKernelChannels:
      j["operation"] = OperationName(r.stream >> 32);
      j["channels_started"] = r.aux;
      j["channels_stopped"] = r.count;
      break;
    case OpType::kProfilerMask:
      j["mask"] = r.aux;
      j["why"] = MaskWhy(r.count);
      break;
    case OpType::kDeviceCompute:
      j["launched_by"] = OperationName(static_cast<uint32_t>(r.redop));
      // 0: activity was lost or none was seen before, so the compute time is unknown, not zero.
      if (r.recv_buffer != 0) j["compute_ns"] = r.count;
      j["compute_kernels"] = r.peer;
      j["gpu_start_ns"] = r.aux;
      j["gpu_end_ns"] = r.send_buffer;
      break;
    case OpType::kDeviceActivityLoss:
      j["lost"] = r.count;
      j["why"] = r.aux == 1 ? "cupti-dropped" : "correlation-unknown";
      break;
    case OpType::kAccelStall:
      j["waited_for"] = r.peer;
      j["block"] = r.dtype;
      j["barrier"] = BarrierName(r.redop);
      j["epoch"] = r.count;
      j["flag"] = r.aux;
      break;
    case OpType::kNumerics:
      AddNumericsJson(trace::DecodeNumerics(r), &j);
      break;
    default:
      return;
  }
  // These records keep other things than a call's datatype and reduction op in those fields.
  j["dtype"] = "";
  j["redop"] = "";
}

}  // namespace ncclscope::tools
