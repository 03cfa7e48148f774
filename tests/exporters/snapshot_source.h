// A RingSource over ring snapshots in memory (tests/hang_detector/job_builder.h), so a test states
// exactly what the writers have written by each scrape: it edits `set` between scrapes (append,
// complete a pending record, wrap, drop a slot as if torn) and the exporter reads it like a file.
// Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "exporters/sources/ring_source.h"
#include "trace/trace_set.h"

namespace ncclscope::testing {

class SnapshotSource final : public exporters::RingSource {
 public:
  trace::TraceSet set;

  std::vector<std::string> List(std::string* error) override;
  // Records from `first` on; write_pos is the snapshot's, overwritten at least the index of its
  // oldest record (what a wrapped ring shows).
  bool Visit(const std::string& name, uint64_t first, trace::RingVisitor* visitor,
             std::string* error) override;
};

}  // namespace ncclscope::testing
