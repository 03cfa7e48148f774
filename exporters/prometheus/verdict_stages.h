// The two stages of a hang verdict as the exporter shows them (docs/metrics.md): the `stage`
// label of each verdict series, and incidents counted across the correlator's runs, so a suspect
// that goes away by itself (a checkpoint, an evaluation) is counted as resolved instead of
// lingering or vanishing without a trace. The stages are the job's incident lifecycle
// (hang_detector/incident/incident_lifecycle.h), the same the in-process watchdog follows: a
// confirmed hang stays "hang" however the next look at the changed job reads (ranks that aborted,
// a threshold that grew), until the job goes on.
#pragma once

#include <cstdint>
#include <memory>

#include "hang_detector/incident/incident_record.h"
#include "hang_detector/verdicts/verdict.h"

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

// Follows the correlator's successive analyses of one job. An incident is a run of consecutive
// analyses that each have at least one hang-class verdict: the correlator's verdicts about one
// stuck job change shape as more ranks block (another communicator, a merged headline), and none
// of that is a new incident. Not thread-safe (the poller serializes it).
class IncidentTracker {
 public:
  // The next analysis at now_wall_ns, returned as the exporter shows it: a confirmed incident's
  // verdict stays confirmed. Null (nothing readable in the directory) says nothing about the job,
  // so it neither opens nor ends an incident. An analysis that carries its watchdog's record
  // (Analysis::incident) takes the record's word on abort mode, where a hang never resolves.
  std::shared_ptr<const hang_detector::Analysis> Observe(
      std::shared_ptr<const hang_detector::Analysis> analysis, int64_t now_wall_ns);
  const IncidentCounts& counts() const { return counts_; }

 private:
  hang_detector::IncidentRecord state_;
  IncidentCounts counts_;
};

}  // namespace ncclscope::exporters
