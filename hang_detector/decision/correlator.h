// The cross-rank correlator: the ring files of one job in, verdicts out. Reads nothing but its
// arguments (time and process checks are injected), so the same code serves the CLI, tests, and
// later the in-process watchdog. Thread-safe: no shared state.
#pragma once

#include <cstdint>

#include "hang_detector/detectors/analyze_options.h"
#include "hang_detector/ingest/job_index.h"
#include "hang_detector/verdicts/verdict.h"
#include "trace/trace_set.h"

namespace ncclscope::hang_detector {

// Indexes the set (a compact copy; the set may be freed afterwards) and analyses it.
Analysis Analyze(const trace::TraceSet& set, const AnalyzeOptions& options);
// For an index streamed from a directory (JobIndex::FromDir), which never holds full records.
Analysis Analyze(const JobIndex& index, const AnalyzeOptions& options);

}  // namespace ncclscope::hang_detector
