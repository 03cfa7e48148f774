// The two stages of a hang verdict as the exporter shows them (docs/metrics.md): the `stage`
// label of each verdict series, and incidents counted across the correlator's runs, so a suspect
// that goes away by itself (a checkpoint, an evaluation) is counted as resolved instead of
// lingering or vanishing without a trace.
#pragma once

#include <cstdint>

#include "hang_detector/verdict.h"

namespace ncclscope::exporters {

// The `stage` label: "hang" (a confirmed hang-class verdict), "suspect" (a hang-class wait not
// confirmed yet), "straggler" (a straggler verdict, never hang-class) or "numerics" (nan-origin,
// corrupt-output: never hang-class either); "healthy" for the healthy verdict, which has no
// series. Thread-safe.
const char* StageLabel(const hang_detector::Verdict& v);

// Incidents since the exporter started, by stage and outcome (ncclscope_incidents_total).
struct IncidentCounts {
  uint64_t suspect_resolved = 0;  // went away before it was confirmed
  uint64_t hang_confirmed = 0;    // reached stage hang, at once or after being a suspect
  uint64_t hang_resolved = 0;     // a confirmed hang that went away afterwards
};

// Follows the correlator's successive analyses of one trace directory. An incident is a run of
// consecutive analyses that each have at least one hang-class verdict: the correlator's verdicts
// about one stuck job change shape as more ranks block (another communicator, a merged
// headline), and none of that is a new incident. Its stage is the highest any of its analyses
// reached. Not thread-safe (the poller serializes it).
class IncidentTracker {
 public:
  // The next analysis. Null (nothing readable in the directory) says nothing about the job, so it
  // neither opens nor ends an incident.
  void Observe(const hang_detector::Analysis* analysis);
  const IncidentCounts& counts() const { return counts_; }

 private:
  enum class Stage : uint8_t { kNone, kSuspect, kHang };
  Stage stage_ = Stage::kNone;
  IncidentCounts counts_;
};

}  // namespace ncclscope::exporters
