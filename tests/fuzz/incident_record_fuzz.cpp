// Fuzz target: any bytes offered as a job's incident record (every rank of the job reads whatever
// the trace directory holds there, and so do the exporter and `ncclscope analyze`). The parser
// refuses them with a message, or what it accepts renders back to text that parses to the same
// record; the abort list of any rank stays within what the record names and is empty unless it
// is a confirmed hang. Never a crash, never an unbounded allocation. Seeds are rendered records.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hang_detector/incident/incident_key.h"
#include "hang_detector/incident/incident_lifecycle.h"
#include "hang_detector/incident/incident_record.h"

namespace {

namespace hd = ncclscope::hang_detector;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  hd::IncidentRecord r;
  std::string error;
  if (!hd::ParseIncident(text, &r, &error)) {
    if (error.empty()) __builtin_trap();
    return 0;
  }
  hd::IncidentRecord back;
  if (!hd::ParseIncident(hd::RenderIncident(r), &back, &error) || !(back == r)) __builtin_trap();
  for (const int rank : {0, 1, 7}) {
    const std::vector<uint64_t> ids = hd::CommsToAbort(r, rank);
    if (r.stage != hd::IncidentStage::kHang && !ids.empty()) __builtin_trap();
    if (ids.size() > r.hang_comms.size() + r.waits.size()) __builtin_trap();
  }
  // Whatever a reader makes of it, an analysis stays well formed.
  hd::Analysis a;
  hd::Verdict v;
  v.cls = hd::VerdictClass::kMissing;
  v.comm_id = r.comm_id;
  v.op = r.op;
  v.seq = r.seq;
  a.verdicts.push_back(v);
  hd::ApplyIncident(r, r.written_wall_ns, &a);
  if (a.verdicts.size() != 1) __builtin_trap();
  if (r.stage == hd::IncidentStage::kHang && !a.verdicts[0].confirmed) __builtin_trap();
  return 0;
}

extern "C" void FuzzSeeds(std::vector<std::string>* seeds) {
  hd::IncidentRecord r;
  r.job_id = "1234.0";
  r.restart = 2;
  r.job = hd::JobKey(r.job_id, r.restart);
  r.holder_pid = 4242;
  r.holder_rank = 3;
  r.written_wall_ns = 1'800'000'000'000'000'000;
  r.passes = 2;
  seeds->push_back(hd::RenderIncident(r));
  r.stage = hd::IncidentStage::kSuspect;
  r.incident = 0x0123456789abcdefULL;
  r.cls = "missing";
  r.comm_id = 0xaa;
  r.comm_name = "dp 0 %";
  r.op = "allreduce";
  r.seq = 6;
  r.culprits = {1};
  r.onset_wall_ns = 1'799'999'990'000'000'000;
  r.why = "a suspect: confirmed at 60 s (the floor)";
  seeds->push_back(hd::RenderIncident(r));
  r.stage = hd::IncidentStage::kHang;
  r.how = hd::ConfirmedHow::kTime;
  r.confirmed_wall_ns = r.written_wall_ns;
  r.abort_mode = true;
  r.hang_comms = {0xaa, 0xbb};
  r.waits = {{0xaa, {0, 2, 3}}, {0xcc, {5, 6, 7}}};
  seeds->push_back(hd::RenderIncident(r));
  r.stage = hd::IncidentStage::kResolved;
  r.hang_comms.clear();
  r.waits.clear();
  r.resolved_wall_ns = r.written_wall_ns;
  seeds->push_back(hd::RenderIncident(r));
}
