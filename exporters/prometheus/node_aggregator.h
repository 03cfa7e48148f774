// The exporter's state: every ring file of the node read incrementally (file_tail.h) into plain
// counters, histograms and gauges of our own, turned into label values only when a scrape asks
// (NodeView). Thread-safe: one mutex serializes refreshes and views (scrapes are rare).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "exporters/measures/arrival_lateness.h"
#include "exporters/measures/size_classes.h"
#include "exporters/prometheus/comm_labels.h"
#include "exporters/prometheus/node_view.h"
#include "exporters/prometheus/nvtx_phases.h"
#include "exporters/sources/ring_source.h"
#include "hang_detector/ingest/process_probe.h"
#include "hang_detector/verdicts/verdict.h"

namespace ncclscope::exporters {

struct AggregatorOptions {
  // Liveness of the writers on this host; null: judged by heartbeat only. Must outlive the
  // aggregator.
  const hang_detector::ProcessProbe* probe = nullptr;
  // A file of another host whose heartbeat has not moved for this long counts as down.
  double stale_heartbeat_s = 10;
  size_t max_comm_labels = kMaxCommLabels;
  std::string version;     // ncclscope_build_info
  bool log_errors = true;  // one stderr line per distinct read error
};

class NodeAggregator {
 public:
  // source must outlive the aggregator.
  NodeAggregator(RingSource* source, AggregatorOptions options);
  ~NodeAggregator();
  NodeAggregator(const NodeAggregator&) = delete;
  NodeAggregator& operator=(const NodeAggregator&) = delete;

  // Reads what is new in every ring file (new files included, removed ones forgotten); a file
  // that cannot be read is counted and its error logged to stderr once. now: CLOCK_MONOTONIC.
  void Refresh(int64_t now_monotonic_ns);
  // The state as a scrape exposes it; `analysis` (the correlator's latest, may be null) adds the
  // verdicts.
  NodeView View(const hang_detector::Analysis* analysis);
  // The verdicts of `analysis` (another view of the job: the job correlator's) as rows, labelled
  // like View's.
  std::vector<VerdictRow> VerdictRows(const hang_detector::Analysis& analysis);

 private:
  class FileState;
  friend class FileState;
  const std::string& CommLabel(uint64_t comm_id);
  int CommRanks(uint64_t comm_id) const;
  FileView ViewOf(FileState& f);
  void AddVerdictRows(const hang_detector::Analysis& analysis, std::vector<VerdictRow>* out);

  RingSource* source_;
  AggregatorOptions options_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<FileState>> files_;  // by path: listing order
  uint32_t next_file_id_ = 0;
  std::unordered_map<uint64_t, std::string> comm_names_;  // first non-empty name seen
  std::unordered_map<uint64_t, int> comm_ranks_;
  CommLabels labels_;
  PhaseLabels phase_labels_;
  ArrivalLateness lateness_;
  struct OpHistograms {
    BucketCounts duration_s, size_bytes;
    std::array<BucketCounts, kSizeClassCount> duration_by_size_s;
  };
  std::map<std::pair<uint64_t, uint32_t>, OpHistograms> histograms_;  // by (comm id, op)
  const std::vector<double>& duration_bounds_ = DurationBucketsSeconds();
  const std::vector<double>& duration_by_size_bounds_ = DurationBySizeBucketsSeconds();
  const std::vector<double>& size_bounds_ = SizeBucketsBytes();
  uint64_t read_errors_ = 0;
  std::set<std::string> logged_errors_;
  int64_t now_ns_ = 0;
};

}  // namespace ncclscope::exporters
