// The identity of a job and of an incident in it, equal on every rank and every reader that looks
// at the same hang: what names the incident's files (incident_files.h) and what its record
// (incident_record.h) is matched on. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "hang_detector/verdicts/verdict.h"

namespace ncclscope::hang_detector {

// One run of a job: the job id the ring files carry and, under torchrun, the restart count
// (TORCHELASTIC_RESTART_COUNT; 0 when unknown). A restarted job reuses its directory: the new run's
// incidents are its own. FNV-1a, 64 bits; restart 0 hashes the job id alone.
uint64_t JobKey(const std::string& job_id, uint32_t restart = 0);

// The stuck communicator, operation and sequence number, or for a verdict about a process (no
// communicator) its class and culprits. Ranks looking a few ms apart may classify one stuck
// operation differently (missing, then desync); its key stays.
uint64_t IncidentKey(const Verdict& v);

// 16 lower-case hex digits, as file names and records write keys.
std::string Hex16(uint64_t v);

}  // namespace ncclscope::hang_detector
