// What one scrape exposes, as label values and numbers: the aggregator's state after the comm
// name cap and label formatting, before any Prometheus type. Plain data.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "exporters/measures/size_classes.h"
#include "exporters/prometheus/buckets.h"
#include "exporters/prometheus/verdict_stages.h"

namespace ncclscope::exporters {

// Why records were lost (the `reason` label of ncclscope_records_lost_total), in this order.
inline constexpr const char* kLostReasons[] = {"overwritten", "dropped", "dropped_comm",
                                               "untracked_completion", "unknown_comm"};
inline constexpr size_t kLostReasonCount = sizeof kLostReasons / sizeof kLostReasons[0];

struct OpRow {
  std::string comm, op;
  uint64_t operations = 0;
  uint64_t bytes = 0;
  uint64_t accelerated = 0;  // of `operations`, those run by ncclscope's own kernels
};

// accel_stall records of one communicator label (docs/collectives.md, "Routing"): kernels of
// ncclscope's that gave up waiting for a peer. A row exists, at 0, from the label's first
// operation on ncclscope's kernels, so a rate sees the first stall.
struct AccelStallRow {
  std::string comm;
  uint64_t stalls = 0;
};

// numerics records (NCCLSCOPE_NUMERICS, trace/numerics_record.h) of one communicator label: the
// sampled collectives, and those whose scanned input held NaN or Inf. A row exists from the
// label's first sample, so a rate sees the first poisoned one.
struct NumericsRow {
  std::string comm;
  uint64_t samples = 0;
  uint64_t nonfinite_inputs = 0;
};

struct CommRow {
  std::string comm;
  uint64_t last_issued_seq = 0;
  uint64_t last_completed_seq = 0;
  int64_t inflight = 0;
  double lateness_s = 0;
  double straggler_score = 0;
};

// Completed operations of one (comm, phase) label pair: how many, and their enqueue to device
// completion summed.
struct PhaseRow {
  std::string comm, phase;
  uint64_t operations = 0;
  double seconds = 0;
};

// One ring file (one process). Several files can carry the same rank (a restarted process):
// counters add up, gauges come from the newest file.
struct FileView {
  std::string rank, local_rank, world_size, host, gpu_uuid, job_id;
  int64_t start_realtime_ns = 0;
  bool up = false;
  double last_progress_s = 0;  // Unix time of the newest device completion, 0 when none
  std::vector<OpRow> ops;
  std::vector<CommRow> comms;
  uint64_t lost[kLostReasonCount] = {};
  std::vector<AccelStallRow> accel_stalls;  // empty while no call ran on ncclscope's kernels
  std::vector<NumericsRow> numerics;        // empty while NCCLSCOPE_NUMERICS sampled nothing
  uint64_t numerics_skipped = 0;            // the ring header's: sampled calls the passes missed
  std::vector<PhaseRow> phases;  // empty when no operation of the file carried an NVTX context
  std::optional<uint64_t> step;  // the NVTX step of its newest operation made in one
};

struct HistogramRow {
  std::string comm, op;
  BucketCounts duration_s, size_bytes;
  std::array<BucketCounts, kSizeClassCount> duration_by_size_s;  // by index into kSizeClasses
};

struct VerdictRow {
  std::string cls, comm, rank;  // rank "" when the verdict names no culprit
  std::string stage;            // StageLabel: "suspect", "hang", "straggler" or "numerics"
  double age_s = 0;
  double confirm_after_s = 0;  // a suspect: the wait at which time alone confirms it
};

// One peer exporter as the job view saw it at its last look (job_correlator.h).
struct PeerRow {
  std::string peer;  // host:port
  bool up = false;
  double last_success_s = 0;  // Unix time of its last answer, 0 when none yet
  double fetch_s = 0;
};

// The job view of an exporter with peers: its role, and when it correlates, the job's verdicts.
struct JobView {
  bool correlating = false;
  std::vector<VerdictRow> verdicts;
  std::optional<IncidentCounts> incidents;
  int ranks_seen = -1;  // -1: no job analysis (serving, or none yet)
  int world_size = -1;
  std::vector<PeerRow> peers;  // the peers looked at in the last cycle
  size_t clashes = 0;          // host names and ranks two sources claim (source_clashes.h)
};

struct NodeView {
  std::vector<FileView> files;  // oldest process first
  std::vector<HistogramRow> histograms;
  std::vector<std::pair<std::string, int>> comm_ranks;  // comm label, ranks
  std::vector<VerdictRow> verdicts;
  std::optional<IncidentCounts> incidents;  // absent without a correlator
  int ranks_seen = -1;                      // of the node's own analysis; -1 without one
  int world_size = -1;
  std::optional<JobView> job;  // absent without peers
  size_t ring_files = 0;
  uint64_t read_errors = 0;
  uint64_t missed_overwritten = 0;  // records overwritten before the exporter read them
  uint64_t missed_torn = 0;         // slots that stayed mid-write (writer died mid-record)
  std::string version;
};

}  // namespace ncclscope::exporters
