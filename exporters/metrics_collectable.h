// What prometheus-cpp's exposer calls at each GET /metrics: reads what is new in the ring files,
// then builds the families from our own aggregates and the cached verdicts (ecosystem.md §2: no
// prometheus-cpp object is touched between scrapes).
#pragma once

#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "exporters/node_aggregator.h"
#include "exporters/verdict_poller.h"

namespace ncclscope::exporters {

class MetricsCollectable final : public prometheus::Collectable {
 public:
  // Both must outlive the collectable; verdicts may be null (no verdict or incident metrics).
  MetricsCollectable(NodeAggregator* aggregator, const VerdictPoller* verdicts)
      : aggregator_(aggregator), verdicts_(verdicts) {}
  // Thread-safe (the aggregator serializes).
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  NodeAggregator* aggregator_;
  const VerdictPoller* verdicts_;
};

}  // namespace ncclscope::exporters
