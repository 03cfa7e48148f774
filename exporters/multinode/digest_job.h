// A job assembled from node digests (`ncclscope analyze --from`): every source fetched in
// parallel, decoded onto this host's clock, merged with the ring files of a local directory when
// one is given, and indexed for the correlator. A source that cannot be had is one line of the
// input report; its ranks are absent (unknown to the correlator, never culprits).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "exporters/multinode/digest_fetch.h"
#include "exporters/multinode/source_clashes.h"
#include "hang_detector/ingest/job_index.h"

namespace ncclscope::exporters {

struct DigestJobOptions {
  FetchOptions fetch;
  std::string local_dir;  // ring files of this host to add; empty: none
  std::string job;        // keep this job's ranks; empty: the job of the newest heartbeat
};

// What one source gave: for the exporter's per-peer metrics and its election (job_correlator.h).
struct SourceReport {
  std::string source;      // the URL or path
  bool ok = false;         // fetched and decoded
  std::string error;       // why not, when not ok
  std::string host;        // the host the digest says it comes from
  uint64_t instance = 0;   // its producing exporter's id (digest.proto); 0 none
  std::vector<int> ranks;  // the global ranks it holds (known ones), sorted
  double round_trip_s = 0;
};

struct DigestJob {
  std::optional<hang_detector::JobIndex> index;
  std::vector<SourceReport> per_source;    // one per source, in order
  size_t sources = 0;                      // after expanding hostfiles and directories
  size_t sources_ok = 0;                   // fetched and decoded
  size_t local_files = 0;                  // ring files read from local_dir
  double max_round_trip_s = 0;             // the largest clock-shift error among the digests used
  std::vector<std::string> source_errors;  // one line per source that failed
  // For stderr: other jobs' ranks left out (trace::JobChoice::Note), ranks reached twice.
  std::vector<std::string> notes;
  // Host names and ranks two sources claim (source_clashes.h); each line is also one of the
  // index's notes (the analysis' input report).
  std::vector<SourceProblem> problems;
};

// The ring files a job view reads itself, and what they say of their node.
struct LocalFiles {
  std::vector<hang_detector::RankFile> files;
  std::vector<std::string> errors;  // one line per file that could not be read
  // Its label, host and instance (the exporter's own; "ring files of DIR" and 0 for analyze),
  // ranks and file hosts; `local` is set by the assembly.
  SourceFacts facts;
};

// Returns false with *error when the --from values cannot be expanded or local_dir cannot be
// listed. Otherwise fills *job; job->index is empty only when no source and no local file could
// be used (job->source_errors say why). Thread-safe.
bool AssembleDigestJob(const std::vector<std::string>& from, const DigestJobOptions& options,
                       DigestJob* job, std::string* error);

// The second half of AssembleDigestJob, for callers that fetch themselves (the exporter's job
// correlator): `fetched` digests plus `local` rank files (read by the caller), keeping `job_id`'s
// ranks (empty: the newest heartbeat's). A rank two sources hold from different processes is kept
// from one (ResolveRankClashes); host names two producers claim are found (FindHostClashes,
// `local.facts` taking part). Fills *job as AssembleDigestJob does. Thread-safe.
void AssembleFetchedJob(LocalFiles local, const std::vector<FetchedDigest>& fetched,
                        const std::string& job_id, size_t max_bytes, DigestJob* job);

}  // namespace ncclscope::exporters
