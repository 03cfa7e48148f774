// Ring files in, timeline events out (timeline_sink.h). Per rank (ring file): a process named by
// rank, host, pid and GPU; under it a track per host thread holding a slice per NCCL call, a
// track per communicator x CUDA stream holding a slice per operation's device execution (from its
// kernel start marker when the profiler saw one, else from when its stream was free, to its
// device completion), a counter of operations in flight, and a track of the verdicts that name
// this rank. Device slices of one collective on every rank share a flow id, as do a send and its
// receive, so viewers draw arrows between them. Headers first, then each file's records on two
// threads (each writing its rank into a part of the sink when the sink has parts), so memory is a
// few files' worth whatever the job's size. The source is visited from those threads, two files
// at a time; the sink itself only from the caller's thread. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exporters/sources/ring_source.h"
#include "exporters/timeline/timeline_options.h"
#include "exporters/timeline/timeline_sink.h"

namespace ncclscope::exporters::timeline {

struct TimelineSummary {
  size_t files = 0;          // ring files read
  size_t ranks_written = 0;  // processes in the trace
  uint64_t host_slices = 0;
  uint64_t device_slices = 0;
  uint64_t open_slices = 0;  // calls or operations that never ended
  uint64_t verdict_marks = 0;
  std::vector<std::string> errors;  // files that could not be read, one line each
  // Clock agreement (clock_bound.h): hosts seen, those bounded against the reference host (the
  // lowest rank's), and the largest bound in ns.
  std::string clock_reference_host;
  int clock_hosts = 0;
  int clock_bounded_hosts = 0;
  int64_t clock_bound_ns = 0;
};

// Writes the whole trace into `sink`, Finish included. False with *error when nothing could be
// written (the listing failed, no file is readable, --comm names no communicator of the selected
// ranks) or when the sink could not write; the sink's file is then not left behind.
bool WriteTimeline(RingSource& source, const TimelineOptions& options, TimelineSink* sink,
                   TimelineSummary* summary, std::string* error);

// Flow id of the device work of collective `seq` of a communicator (every member's), and of the
// `seq`th send from comm rank `from` to `to` with its receive. Never 0.
uint64_t CollectiveFlowId(uint64_t comm_id, uint64_t seq);
uint64_t P2pFlowId(uint64_t comm_id, int from, int to, uint64_t seq);

}  // namespace ncclscope::exporters::timeline
