#include "exporters/operation_size.h"

#include "trace/nccl_names.h"

namespace ncclscope::exporters {

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

}  // namespace ncclscope::exporters
