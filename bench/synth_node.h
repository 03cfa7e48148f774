// The synthetic job of bench/synth_plan.h as a live job spread over nodes of 8 ranks, for the node
// digest benchmark (bench/digest_scale_bench.cpp): the ring files of one node at a time, written
// through the real RingWriter, so a node's digest is built exactly as the exporter builds it.
// Unlike bench/synth_job (a job its launcher killed), the job is still running: every rank's
// heartbeat is fresh at `now`, and the culprit's peers have waited `hang_age` by then.
#pragma once

#include <cstdint>
#include <string>

#include "bench/synth_plan.h"

namespace ncclscope::bench {

struct SynthNodeOptions {
  Topology topo;                  // 8 x 4 x 128 = 4096 ranks
  int ranks_per_node = 8;         // node k holds ranks [k * 8, k * 8 + 8): one tp group
  int64_t records = 10000;        // about this many records per rank
  uint64_t ring_records = 65536;  // NCCLSCOPE_RING_RECORDS' default; fewer than `records` wraps
  int culprit = -1;               // default: a stage-0 rank in the middle of the job
  double hang_age_s = 30;         // how long the culprit's peers have waited at `now`
  bool hang = true;               // false: no culprit, the job is healthy up to `now`
};

class SynthNodeJob {
 public:
  // Simulates the stall (SimulateStall over every rank): seconds for 4096 ranks. Returns false
  // with *error for options that make no job.
  bool Init(const SynthNodeOptions& options, std::string* error);

  int nodes() const { return options_.topo.World() / options_.ranks_per_node; }
  int culprit() const { return options_.culprit; }
  uint64_t culprit_seq() const { return outcome_.culprit_seq; }
  // The wall clock (ns) the job's records and heartbeats are as of: the digest's production time.
  int64_t now_wall_ns() const { return now_mono_ + wall_offset_; }
  // "node<k>", the host every ring of node k names.
  static std::string Host(int node) { return "node" + std::to_string(node); }

  // Writes node k's ring files into `dir` (created), named as the writer names them. Thread-safe
  // for distinct nodes.
  bool WriteNode(int node, const std::string& dir, std::string* error) const;

 private:
  struct Counters;
  bool WriteRank(int rank, const std::string& dir, std::string* error) const;
  uint64_t CommId(int rank, CommKind kind) const;
  int64_t StepNs(int64_t step) const;

  SynthNodeOptions options_;
  int64_t stall_step_ = 0;
  Outcome outcome_;
  int64_t t0_ = 0;        // monotonic ns of step 0
  int64_t now_mono_ = 0;  // monotonic ns the job is observed at
  int64_t wall_offset_ = 0;
  uint64_t world_id_ = 0;
};

}  // namespace ncclscope::bench
