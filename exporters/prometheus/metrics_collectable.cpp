#include "exporters/prometheus/metrics_collectable.h"

#include "exporters/prometheus/metric_families.h"
#include "trace/clock.h"

namespace ncclscope::exporters {

std::vector<prometheus::MetricFamily> MetricsCollectable::Collect() const {
  aggregator_->Refresh(trace::MonotonicNs());
  if (verdicts_ == nullptr) return RenderFamilies(aggregator_->View(nullptr));
  const VerdictSnapshot verdicts = verdicts_->Snapshot();
  NodeView view = aggregator_->View(verdicts.analysis.get());
  view.incidents = verdicts.incidents;
  const VerdictPoller* job_verdicts = nullptr;
  const JobCorrelator* correlator = nullptr;
  {
    std::lock_guard<std::mutex> lock(job_mutex_);
    job_verdicts = job_verdicts_;
    correlator = job_;
  }
  if (job_verdicts != nullptr && correlator != nullptr) {
    // The status first: a cycle that ends between the two reads leaves an analysis newer than
    // the role, never a job verdict on an exporter that says it serves.
    const JobStatus status = correlator->Status();
    const VerdictSnapshot job = job_verdicts->Snapshot();
    JobView& jv = view.job.emplace();
    jv.correlating = status.correlating;
    if (status.correlating && job.analysis != nullptr) {
      jv.verdicts = aggregator_->VerdictRows(*job.analysis);
      jv.ranks_seen = job.analysis->input.ranks_seen;
      jv.world_size = job.analysis->input.world_size;
    }
    jv.incidents = job.incidents;
    jv.clashes = status.clashes;
    for (const PeerMetrics& p : status.peers) {
      if (p.looked_at) jv.peers.push_back({p.label, p.up, p.last_success_s, p.fetch_s});
    }
  }
  return RenderFamilies(view);
}

void MetricsCollectable::SetJobView(const VerdictPoller* job_verdicts, const JobCorrelator* job) {
  std::lock_guard<std::mutex> lock(job_mutex_);
  job_verdicts_ = job_verdicts;
  job_ = job;
}

}  // namespace ncclscope::exporters
