#include "exporters/verdict_stages.h"

namespace ncclscope::exporters {

const char* StageLabel(const hang_detector::Verdict& v) {
  if (hang_detector::IsConfirmedHang(v)) return "hang";
  if (hang_detector::IsSuspect(v)) return "suspect";
  return hang_detector::FindingStage(v.cls);
}

void IncidentTracker::Observe(const hang_detector::Analysis* analysis) {
  if (analysis == nullptr) return;
  Stage now = Stage::kNone;
  for (const hang_detector::Verdict& v : analysis->verdicts) {
    if (hang_detector::IsConfirmedHang(v)) {
      now = Stage::kHang;
      break;
    }
    if (hang_detector::IsSuspect(v)) now = Stage::kSuspect;
  }
  if (now == Stage::kNone) {
    if (stage_ == Stage::kSuspect) ++counts_.suspect_resolved;
    if (stage_ == Stage::kHang) ++counts_.hang_resolved;
    stage_ = Stage::kNone;
    return;
  }
  // An incident never steps back: a confirmed hang whose next analysis only suspects is still
  // the same confirmed hang.
  if (now == Stage::kHang && stage_ != Stage::kHang) {
    ++counts_.hang_confirmed;
    stage_ = Stage::kHang;
  } else if (stage_ == Stage::kNone) {
    stage_ = Stage::kSuspect;
  }
}

}  // namespace ncclscope::exporters
