#include "exporters/metrics_collectable.h"

#include "exporters/metric_families.h"
#include "trace/clock.h"

namespace ncclscope::exporters {

std::vector<prometheus::MetricFamily> MetricsCollectable::Collect() const {
  aggregator_->Refresh(trace::MonotonicNs());
  if (verdicts_ == nullptr) return RenderFamilies(aggregator_->View(nullptr));
  const VerdictSnapshot verdicts = verdicts_->Snapshot();
  NodeView view = aggregator_->View(verdicts.analysis.get());
  view.incidents = verdicts.incidents;
  return RenderFamilies(view);
}

}  // namespace ncclscope::exporters
