// Which records are operations (collectives and send/recv), and their size in nccl-tests' "size"
// convention (docs/metrics.md), so that bytes / time is the algorithm bandwidth nccl-tests prints.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "trace/record.h"

namespace ncclscope::exporters {

// Collectives and send/recv: what ncclscope_operations_total counts. Pure.
bool IsOperation(trace::OpType op);

// An operation NCCL accepted (ncclSuccess or ncclInProgress): one that runs, is counted and timed.
// A refused call enqueued nothing. Pure.
bool WasEnqueued(const trace::RecordData& record);

// Bytes of one operation on a communicator of `nranks` ranks (1 when unknown): count x dtype size,
// times nranks for allgather, gather, reducescatter, scatter and alltoall (their count is per
// rank). 0 when the dtype is unknown. Pure.
uint64_t OperationBytes(const trace::RecordData& record, int nranks);

// Seconds from the call's entry to its device completion (host clock of the rank): the time in
// ncclscope_operation_duration_seconds and `ncclscope stats`. The record must be completed. Pure.
double OperationSeconds(const trace::RecordData& record);

// nccl-tests' bus bandwidth factor (busBw = algBw x factor, algBw = OperationBytes / time):
// 2(n-1)/n for AllReduce; (n-1)/n for AllGather, ReduceScatter, AlltoAll, Gather and Scatter;
// 1 for Broadcast, Reduce, Send and Recv (NVIDIA/nccl-tests doc/PERFORMANCE.md, and NCCL's
// Inspector, ext-profiler/inspector, inspectorComputeOpBw). 0 for anything else or nranks < 1.
// Pure.
double BusBandwidthFactor(trace::OpType op, int nranks);

// When each operation's device work could start: its call's entry, or the end of the work the
// same stream had before it, whichever is later. A rank that waited on its own earlier work was
// not waiting for its peers. Feed completions in the order the rank issued them. Not thread-safe.
class StreamStarts {
 public:
  // The start of `record`'s device work, remembering its completion for the stream's next one.
  int64_t StartOf(const trace::RecordData& record);
  void Clear() { done_.clear(); }

 private:
  std::unordered_map<uint64_t, int64_t> done_;  // by stream
};

}  // namespace ncclscope::exporters
