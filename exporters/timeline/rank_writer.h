// Writes one rank of a timeline: its process, a track per host thread with a slice per call, a
// track per communicator x stream with a slice per operation's device execution, the
// operations-in-flight counter and the verdicts naming it (timeline_builder.h says what each
// means). Thread-safe for distinct sinks and summaries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "exporters/timeline/rank_records.h"
#include "exporters/timeline/timeline_builder.h"
#include "exporters/timeline/timeline_sink.h"

namespace ncclscope::exporters::timeline {

// file_index numbers the rank's tracks (its uuids); window_ns bounds what is written (wall ns).
void WriteRank(const FileEntry& file, const FileRecords& records, size_t file_index,
               const TimelineOptions& options, std::pair<int64_t, int64_t> window_ns,
               const std::vector<Mark>& marks, TimelineSink* sink, TimelineSummary* summary);

}  // namespace ncclscope::exporters::timeline
