// Hand-written PyTorch Flight Recorder dumps for the end-to-end tests: one job of N ranks on the
// default process group, each rank's entries spelled out, written as torch writes them (pickle,
// "<prefix><rank>", the file's time set to when the rank dumped). Every entry has a Python stack
// whose caller frames the entries share, so the pickles hold shared frame dicts as torch's do;
// with timing, entries have the start times and duration_ms TORCH_NCCL_ENABLE_TIMING=1 gives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/flight_recorder/fr_dump.h"

namespace ncclscope::testing {

class FrJob {
 public:
  // `ranks` ranks in "default_pg"; the job's first entry is created at `t0_ns` (wall clock).
  FrJob(int ranks, int64_t t0_ns, const std::string& version = "2.10", bool timing = false);

  // Appends an entry to `rank`'s dump, created `at_s` seconds after t0; completed entries finish
  // 5 ms later, as the watchdog sees it; with timing, started and completed ones start 1 ms after
  // creation and completed ones take kDurationMs on the device. `coll_seq` / `p2p_seq` as torch
  // numbers them.
  flight_recorder::FrEntry& Add(int rank, const std::string& profiling_name, int64_t coll_seq,
                                int64_t p2p_seq, flight_recorder::FrState state, double at_s);
  // The same collective on every rank in `ranks` (all when empty), one second apart from `at_s`.
  void Collectives(int first_seq, int last_seq, flight_recorder::FrState state, double at_s,
                   const std::vector<int>& ranks = {});
  flight_recorder::FrDump& dump(int rank) { return dumps_.at(rank); }

  static constexpr double kDurationMs = 3.5;

  // Writes every rank's dump but those in `skip` into `dir`, each file's time `dumped_at_s` after
  // t0; the ranks in `json` as _dump_nccl_trace_json writes them, the others as pickles. False
  // (and a test failure) when a file cannot be written.
  bool Write(const std::string& dir, double dumped_at_s, const std::vector<int>& skip = {},
             const std::vector<int>& json = {}) const;

 private:
  int64_t t0_ns_;
  bool timing_;
  std::vector<flight_recorder::FrDump> dumps_;
  std::vector<int64_t> next_record_id_;
};

}  // namespace ncclscope::testing
