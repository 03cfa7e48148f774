// What prometheus-cpp's exposer calls at each GET /metrics: reads what is new in the ring files,
// then builds the families from our own aggregates and the cached verdicts (ecosystem.md §2: no
// prometheus-cpp object is touched between scrapes).
#pragma once

#include <mutex>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "exporters/multinode/job_correlator.h"
#include "exporters/prometheus/node_aggregator.h"
#include "exporters/prometheus/verdict_poller.h"

namespace ncclscope::exporters {

class MetricsCollectable final : public prometheus::Collectable {
 public:
  // Both must outlive the collectable; verdicts may be null (no verdict or incident metrics).
  MetricsCollectable(NodeAggregator* aggregator, const VerdictPoller* verdicts)
      : aggregator_(aggregator), verdicts_(verdicts) {}
  // Adds the job view (an exporter with peers): its poller and correlator, which must outlive the
  // collectable. May be called while scrapes run (the peers are known only once the port is).
  void SetJobView(const VerdictPoller* job_verdicts, const JobCorrelator* job);
  // Thread-safe (the aggregator serializes).
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  NodeAggregator* aggregator_;
  const VerdictPoller* verdicts_;
  mutable std::mutex job_mutex_;
  const VerdictPoller* job_verdicts_ = nullptr;  // under job_mutex_
  const JobCorrelator* job_ = nullptr;           // under job_mutex_
};

}  // namespace ncclscope::exporters
