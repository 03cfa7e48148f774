// The stages of a job's incident, decided in one place for every reader: the in-process watchdog
// (plugin/watchdog/), the exporter (exporters/prometheus/verdict_poller.*) and `ncclscope analyze`.
//
//   none/resolved --hang-class verdict--> suspect --confirmed--> hang
//                 --confirmed verdict------------------------->  hang
//   suspect --no hang-class verdict, or local progress--> resolved
//   hang    --report mode, no hang-class verdict, or local progress--> resolved
//   hang    --abort mode--> stays hang: the job was told to fail and is restarted
//
// A confirmed incident is one fact of the job: its identity (communicator, operation, sequence
// number, culprits) and how it was confirmed are written once and never judged again, whatever a
// later look at the changed job says (ranks that aborted, a new decider whose threshold differs).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "hang_detector/incident/incident_record.h"
#include "hang_detector/verdicts/verdict.h"

namespace ncclscope::hang_detector {

enum class IncidentEvent : uint8_t {
  kNothing,    // the stage is what it was
  kSuspected,  // a new incident, not confirmed yet
  kConfirmed,  // the incident reached stage hang (at once, or from suspect)
  kResolved,   // the incident went away: a suspect, or a hang where it may (report mode)
};

struct IncidentStep {
  IncidentRecord next;
  IncidentEvent event = IncidentEvent::kNothing;
};

// The record after one more analysis of the job at now_wall_ns. prev is the job's record as read
// (stage none when there is none, or it is an earlier run's: OfThisRun). The job, holder, written
// and passes fields are carried over for the caller to set.
IncidentStep Advance(const IncidentRecord& prev, const Analysis& a, int64_t now_wall_ns);

// The record once the work the deciding rank was stalled on completed (its watchdog's own
// progress: the job went on). aborted_here: this process aborted a communicator of the incident,
// and a wait that an abort ended is no progress. A suspect resolves; a confirmed hang only in
// report mode, and never after an abort.
IncidentStep OnLocalProgress(const IncidentRecord& prev, bool aborted_here, int64_t now_wall_ns);

// Makes `a` say what the record says: a confirmed hang stays confirmed (the verdict with the
// incident's key, else the first hang-class verdict, is marked confirmed with the record's words)
// and a.incident describes the record. A record of no incident changes nothing.
void ApplyIncident(const IncidentRecord& r, int64_t now_wall_ns, Analysis* a);

// Whether a record read from a directory is the current run's: of job_key, and written at or after
// run_start_wall_ns (when the reader's own run began: a record older than that is an earlier run's
// of the same job id, a reused directory).
bool OfThisRun(const IncidentRecord& r, uint64_t job_key, int64_t run_start_wall_ns);

// How a resolved incident ended, in words: "a suspect that progressed", "confirmed by time, then
// progressed", "confirmed by proof, then progressed". Empty unless resolved.
std::string Resolution(const IncidentRecord& r);

}  // namespace ncclscope::hang_detector
