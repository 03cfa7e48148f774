#include "exporters/measures/operation_size.h"

#include <algorithm>

#include "trace/clock.h"
#include "trace/nccl_names.h"

namespace ncclscope::exporters {

bool WasEnqueued(const trace::RecordData& record) {
  constexpr int32_t kSuccess = 0;
  constexpr int32_t kInProgress = 7;
  return record.result == kSuccess || record.result == kInProgress;
}

bool IsOperation(trace::OpType op) {
  return trace::IsCollective(op) || trace::IsP2P(op);
}

uint64_t OperationBytes(const trace::RecordData& record, int nranks) {
  const int element = trace::DataTypeSize(record.dtype);
  if (element <= 0) return 0;
  const uint64_t bytes = record.count * static_cast<uint64_t>(element);
  switch (static_cast<trace::OpType>(record.op)) {
    case trace::OpType::kAllGather:
    case trace::OpType::kGather:
    case trace::OpType::kReduceScatter:
    case trace::OpType::kScatter:
    case trace::OpType::kAlltoAll:
      return bytes * static_cast<uint64_t>(nranks > 0 ? nranks : 1);
    default:
      return bytes;
  }
}

double OperationSeconds(const trace::RecordData& record) {
  return static_cast<double>(record.t_device_done_ns - record.t_enter_ns) / trace::kNsPerS;
}

double BusBandwidthFactor(trace::OpType op, int nranks) {
  if (nranks < 1) return 0;
  const double n = nranks;
  switch (op) {
    case trace::OpType::kAllReduce:
      return 2 * (n - 1) / n;
    case trace::OpType::kAllGather:
    case trace::OpType::kReduceScatter:
    case trace::OpType::kAlltoAll:
    case trace::OpType::kGather:
    case trace::OpType::kScatter:
      return (n - 1) / n;
    case trace::OpType::kBroadcast:
    case trace::OpType::kReduce:
    case trace::OpType::kSend:
    case trace::OpType::kRecv:
      return 1;
    default:
      return 0;
  }
}

int64_t StreamStarts::StartOf(const trace::RecordData& record) {
  int64_t& done = done_[record.stream];
  const int64_t start = std::max(record.t_enter_ns, done);
  done = std::max(done, record.t_device_done_ns);
  return start;
}

}  // namespace ncclscope::exporters
