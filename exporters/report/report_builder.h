// `ncclscope report`: one self-contained HTML page about a job (no script, no network fetch; it
// opens from disk or a ticket attachment): the verdicts with their evidence, a timeline of the
// ranks around the incident (inline SVG: the culprits, their neighbours and a few victims), the
// cost tables of `ncclscope stats`, what each communicator waits on, and the job's metadata
// (hosts, ranks, NCCL version, what the input lacked). At 4096 ranks the per-rank table shows the
// ranks that matter (in a verdict, pending work, the latest) and sums up the others. Not
// thread-safe.
#pragma once

#include <string>

#include "exporters/sources/ring_source.h"
#include "exporters/stats/cost_table.h"
#include "hang_detector/verdicts/verdict.h"

namespace ncclscope::exporters::report {

struct ReportInputs {
  std::string dir;                                    // shown as where the traces came from
  std::string version;                                // ncclscope's
  const hang_detector::Analysis* analysis = nullptr;  // the verdicts (required)
  const CostTable* costs = nullptr;                   // stats' table of the same files (required)
  int64_t generated_ns = 0;                           // CLOCK_REALTIME of the report
};

// Writes the page to `path` (0600, through exporters/timeline/output_file.h: nothing is left
// behind on failure). False with *error when the files cannot be listed or the page not written.
bool WriteReport(RingSource& source, const ReportInputs& inputs, const std::string& path,
                 std::string* error);

}  // namespace ncclscope::exporters::report
