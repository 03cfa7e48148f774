// `ncclscope stats`: what the job's collectives and sends/receives cost, in the units nccl-tests
// taught, per communicator x operation x message-size class, plus a line per rank. Read through
// the exporter's own tail reader (file_tail.h) with its definitions of an operation, its bytes,
// its size class, its duration (operation_size.h, size_classes.h) and a rank's lateness
// (arrival_lateness.h), so these numbers and /metrics agree for the same records. Not
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "exporters/sources/ring_source.h"
#include "exporters/stats/comm_instances.h"
#include "trace/record.h"

namespace ncclscope::exporters {

// One communicator x operation x size class (size_classes.h), over every rank seen: calls of
// any count and datatype whose bytes fall in the class are one row.
struct CostRow {
  uint64_t comm_id = 0;
  std::string comm_name;  // the communicator's name, or its id in hex when it has none
  // Which of the communicators of that name: `tp (ranks 2,3)` (CommInstance::label), and its
  // members' global ranks.
  std::string comm_label;
  std::vector<int> members;
  int nranks = -1;  // -1 when no rank's comm table said
  trace::OpType op = trace::OpType::kUnknown;
  size_t size_class = 0;
  uint64_t calls = 0;  // completed operations, every rank's counted
  uint64_t bytes = 0;  // their OperationBytes, summed
  // Of those, the ones whose NCCL kernel CUPTI timed on the GPU (NCCLSCOPE_CUPTI=1,
  // device_compute records of their own communicator and sequence number; a kernel launched for
  // a whole group is not split among its operations).
  uint64_t device_calls = 0;
  // Of those, the ones whose device time torch's CUDA events measured (event_duration records:
  // a Flight Recorder dump's duration_ms, TORCH_NCCL_ENABLE_TIMING=1; a coalesced group's sends
  // and receives are not split among its operations).
  uint64_t event_calls = 0;
  // Where the times below come from: "device" when every call's kernel time is known (its GPU
  // start to end), else "event" when every call's CUDA-event time is, else "host" (call entry to
  // device completion as the host saw it, OperationSeconds: what /metrics' duration histogram
  // holds; from a Flight Recorder dump, time_created_ns to time_discovered_completed_ns, when
  // torch's watchdog noticed the completion, not when the work ended).
  const char* timing = "host";
  double p50_s = 0, p90_s = 0, p99_s = 0, mean_s = 0;
  // nccl-tests' bandwidths in GB/s (1e9 bytes), from the same times: algBw = bytes / total time
  // of the calls, so a row of one size is nccl-tests' size / time; busBw = algBw x
  // BusBandwidthFactor. 0 when unknown.
  double algbw_gbs = 0, busbw_gbs = 0;
  // Collectives completed on two ranks or more: the rank with the largest mean lateness (median
  // wait of the others minus its own) over this row's collectives, and that mean. -1 when none.
  int slowest_rank = -1;
  double slowest_lateness_s = 0;
};

// One rank (ring file) of the job.
struct RankRow {
  int rank = -1;  // global rank; -1 when its header did not say
  std::string host;
  int pid = -1;
  uint64_t calls = 0;    // completed operations
  double seconds = 0;    // their durations, summed
  uint64_t pending = 0;  // operations not complete when read (running, hung, or never stamped)
  // Mean lateness over the collectives it completed together with another rank; 0 when none.
  double mean_lateness_s = 0;
  uint64_t lateness_samples = 0;
};

struct CostTable {
  // By communicator name, then members, then operation, then size class.
  std::vector<CostRow> rows;
  // Every communicator a file's comm table or records name, by id (FindCommInstance), with or
  // without a row: what the report names the communicators waiting on an operation by.
  std::vector<CommInstance> comms;
  std::vector<RankRow> ranks;       // by global rank (unknown last), then pid
  std::vector<std::string> errors;  // files that could not be read, one line each
  size_t files = 0;                 // ring files read
};

// Reads every ring file `source` lists (once; a live job's pending operations are left out of the
// times and counted per rank). False with *error when the listing fails outright.
bool BuildCostTable(RingSource& source, CostTable* out, std::string* error);

}  // namespace ncclscope::exporters
