#include "exporters/prometheus/verdict_stages.h"

#include "hang_detector/incident/incident_lifecycle.h"

namespace ncclscope::exporters {

namespace hd = hang_detector;

const char* StageLabel(const hd::Verdict& v) {
  if (hd::IsConfirmedHang(v)) return "hang";
  if (hd::IsSuspect(v)) return "suspect";
  return hd::FindingStage(v.cls);
}

std::shared_ptr<const hd::Analysis> IncidentTracker::Observe(
    std::shared_ptr<const hd::Analysis> analysis, int64_t now_wall_ns) {
  if (analysis == nullptr) return analysis;
  if (!analysis->incident.key.empty()) state_.abort_mode = analysis->incident.abort_mode;
  const hd::IncidentStage before = state_.stage;
  hd::IncidentStep step = hd::Advance(state_, *analysis, now_wall_ns);
  state_ = std::move(step.next);
  switch (step.event) {
    case hd::IncidentEvent::kConfirmed:
      ++counts_.hang_confirmed;
      break;
    case hd::IncidentEvent::kResolved:
      ++(before == hd::IncidentStage::kHang ? counts_.hang_resolved : counts_.suspect_resolved);
      break;
    case hd::IncidentEvent::kSuspected:
    case hd::IncidentEvent::kNothing:
      break;
  }
  if (state_.stage != hd::IncidentStage::kHang) return analysis;
  // A confirmed incident's verdict reads as confirmed in this analysis too (a copy: analyses are
  // shared with scrapes in flight).
  bool confirmed_here = false;
  for (const hd::Verdict& v : analysis->verdicts) confirmed_here |= hd::IsConfirmedHang(v);
  if (confirmed_here) return analysis;
  auto shown = std::make_shared<hd::Analysis>(*analysis);
  hd::ApplyIncident(state_, now_wall_ns, shown.get());
  return shown;
}

}  // namespace ncclscope::exporters
