// Runs the cross-rank correlator (hang_detector) on a background thread every few seconds and
// keeps its latest answer, so a scrape never waits for an analysis: it reads the cached one. It
// also follows the answers over time, counting incidents by stage and outcome (verdict_stages.h).
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "exporters/prometheus/verdict_stages.h"
#include "hang_detector/decision/correlator.h"
#include "hang_detector/verdicts/verdict.h"

namespace ncclscope::exporters {

// The newest analysis and the incidents counted up to and including it, taken together.
struct VerdictSnapshot {
  std::shared_ptr<const hang_detector::Analysis> analysis;  // null before the first
  IncidentCounts incidents;
};

class VerdictPoller {
 public:
  // One analysis; null when there is nothing to analyse (no readable ring file).
  using AnalyzeFn = std::function<std::shared_ptr<const hang_detector::Analysis>()>;

  VerdictPoller(AnalyzeFn analyze, double interval_s);
  // Stops and joins the thread.
  ~VerdictPoller();
  VerdictPoller(const VerdictPoller&) = delete;
  VerdictPoller& operator=(const VerdictPoller&) = delete;

  // Starts the thread; the first analysis runs at once. Call once.
  void Start();
  // Runs one analysis on the caller's thread (tests, and Start's first). Thread-safe.
  void RunOnce();
  // The newest analysis, null before the first. Thread-safe.
  std::shared_ptr<const hang_detector::Analysis> Latest() const;
  // The newest analysis with its incident counts, consistent with each other. Thread-safe.
  VerdictSnapshot Snapshot() const;

 private:
  void Loop();

  AnalyzeFn analyze_;
  double interval_s_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::shared_ptr<const hang_detector::Analysis> latest_;
  IncidentTracker incidents_;
  std::thread thread_;
};

// The production analysis: streams every ring file of `dir` into the correlator's index and
// analyses it as of now, checking writer processes of this host, with `options`' thresholds
// (stall, confirmation; its clock and probe are set here); the files of `job` only (empty: of the
// newest heartbeat's job, IngestOptions::job). What the job's watchdog recorded of its incident
// there is applied (hang_detector::ApplyRecordedIncident). Thread-safe.
VerdictPoller::AnalyzeFn AnalyzeTraceDir(const std::string& dir,
                                         const hang_detector::AnalyzeOptions& options,
                                         const std::string& job = "");

}  // namespace ncclscope::exporters
