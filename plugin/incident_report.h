// What the watchdog does once per incident, off the application's threads: correlate the job
// directory, decide whether this rank reports (the first one to claim the incident), write
// verdict.json atomically and print a short verdict on stderr. Allocates and does file I/O: call
// from the background thread only. Never throws.
#pragma once

#include <cstdint>
#include <string>

#include "hang_detector/verdict.h"
#include "trace/trace_dir.h"

namespace ncclscope::plugin {

inline constexpr const char* kVerdictFile = trace::kVerdictFileName;

// The key of an incident, equal on every rank that analyses the same hang: the stuck
// communicator, operation and sequence number, or the class and culprits of a process verdict.
uint64_t IncidentKey(const hang_detector::Verdict& v);

// Claims the report of one stage ("suspect" or "hang") of an incident for this process: false
// when some process already reported that stage of an incident since onset_wall_ns (the stage's
// stamp file, <dir>/.verdict-<stage>.stamp, is newer: ranks looking a few ms apart may name the
// incident differently) or created the incident's lock file (<dir>/.verdict-<key>-<stage>.lock,
// O_EXCL) first. Thread-safe (the file system arbitrates).
bool ClaimIncident(const std::string& dir, const hang_detector::Verdict& v, int64_t onset_wall_ns,
                   const char* stage);

// Writes contents to <dir>/<name> through a temporary file and rename(2), mode 0600, so readers
// see the old file or the new one, never a part. Returns false and sets *error on failure.
bool WriteFileAtomically(const std::string& dir, const std::string& name,
                         const std::string& contents, std::string* error);

// The stderr block: the first verdict's headline and evidence, the other verdicts' headlines and
// where the file is. Pure; thread-safe.
std::string VerdictBlock(const hang_detector::Analysis& a, const std::string& verdict_path,
                         int rank, int pid);

}  // namespace ncclscope::plugin
