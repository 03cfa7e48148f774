// The files of a job's incidents in a trace directory, every one keyed by the job (several jobs may
// share a directory: a reused NCCLSCOPE_DIR), and how they are written and read:
//
//   .watchdog-<job key>.lock       which rank's watchdog decides (plugin/watchdog/node_lock.h)
//   .incident-<job key>            the job's incident record (incident_record.h)
//   .incident-<job key>-<incident key>-<stage>.claim
//                                  who reported a stage of an incident where no rank can hold the
//                                  node lock, and each numerics verdict: created once (O_EXCL)
//   verdict.json                   the job's report (analyze --json's document, naming its job),
//                                  when the directory holds no other job's ring files
//   verdict.<job id>.json          the same where it does: one name per job id (ids are
//                                  [A-Za-z0-9._-] and never empty), never "verdict.json" and never
//                                  the exporter's "verdict-job.json" (a dot, not a dash, follows
//                                  "verdict")
//
// Allocates and does file I/O; thread-safe (the file system arbitrates). Never throws except
// std::bad_alloc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hang_detector/incident/incident_record.h"
#include "hang_detector/verdicts/verdict.h"

namespace ncclscope::hang_detector {

std::string NodeLockPath(const std::string& dir, uint64_t job_key);
std::string IncidentRecordName(uint64_t job_key);  // relative to the directory

// The job's verdict file name: "verdict.json", or "verdict.<job id>.json" when the directory
// holds ring files of other jobs too. job_id as the ring headers hold it ([A-Za-z0-9._-]).
std::string VerdictFileName(const std::string& job_id, bool directory_shared);

// Claims the report of one stage of an incident for this process by creating its claim file
// (O_EXCL, 0600): false when another process created it first, or it cannot be created.
bool ClaimIncidentStage(const std::string& dir, uint64_t job_key, uint64_t incident,
                        const char* stage);

// Writes contents to <dir>/<name> through a temporary file and rename(2), mode 0600, so readers
// see the old file or the new one, never a part. Returns false and sets *error on failure.
bool WriteFileAtomically(const std::string& dir, const std::string& name,
                         const std::string& contents, std::string* error);

// The job's incident record in dir, when there is one of this run (OfThisRun with
// run_start_wall_ns); nullopt when there is none, it is an earlier run's, or it is damaged
// (*error says why, empty when there simply is none).
std::optional<IncidentRecord> ReadIncidentRecord(const std::string& dir, uint64_t job_key,
                                                 int64_t run_start_wall_ns, std::string* error);

// What the job's in-process watchdog recorded of its current incident in `dir`, applied to an
// analysis of that directory's ring files (ApplyIncident): a hang the watchdog confirmed reads as
// confirmed, and Analysis::incident describes the record. The record is the analysed run's
// (InputReport::job, restart, run_start_wall_ns); a damaged one adds a note and changes nothing.
void ApplyRecordedIncident(const std::string& dir, int64_t now_wall_ns, Analysis* analysis);

}  // namespace ncclscope::hang_detector
