// Which records are operations (collectives and send/recv), and their size in nccl-tests' "size"
// convention (docs/metrics.md), so that bytes / time is the algorithm bandwidth nccl-tests prints.
#pragma once

#include <cstdint>

#include "trace/record.h"

namespace ncclscope::exporters {

// Collectives and send/recv: what ncclscope_operations_total counts. Pure.
bool IsOperation(trace::OpType op);

// Bytes of one operation on a communicator of `nranks` ranks (1 when unknown): count x dtype size,
// times nranks for allgather, gather, reducescatter, scatter and alltoall (their count is per
// rank). 0 when the dtype is unknown. Pure.
uint64_t OperationBytes(const trace::RecordData& record, int nranks);

}  // namespace ncclscope::exporters
