#include "exporters/metrics_collectable.h"

#include "exporters/metric_families.h"
#include "trace/clock.h"

namespace ncclscope::exporters {

std::vector<prometheus::MetricFamily> MetricsCollectable::Collect() const {
  aggregator_->Refresh(trace::MonotonicNs());
  const auto analysis = verdicts_ != nullptr ? verdicts_->Latest() : nullptr;
  return RenderFamilies(aggregator_->View(analysis.get()));
}

}  // namespace ncclscope::exporters
