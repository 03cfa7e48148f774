#include "exporters/prometheus/metric_families.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace ncclscope::exporters {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<std::string>;

// Rows of one family keyed by label values (in the order of the family's label names), so
// files of the same rank merge into one series: counters add up, gauges keep the last value set
// (files are visited oldest process first, so the newest process wins).
class Rows {
 public:
  void Add(const Labels& key, double v) { rows_[key] += v; }
  void Set(const Labels& key, double v) { rows_[key] = v; }
  void Max(const Labels& key, double v) {
    auto [it, inserted] = rows_.emplace(key, v);
    if (!inserted) it->second = std::max(it->second, v);
  }
  void Min(const Labels& key, double v) {
    auto [it, inserted] = rows_.emplace(key, v);
    if (!inserted) it->second = std::min(it->second, v);
  }
  const std::map<Labels, double>& rows() const { return rows_; }

 private:
  std::map<Labels, double> rows_;
};

ClientMetric Metric(const std::vector<std::string>& names, const Labels& values) {
  ClientMetric m;
  for (size_t i = 0; i < names.size(); ++i) {
    // An empty value is the same as no label in Prometheus: leave it out.
    if (!values[i].empty()) m.label.push_back({names[i], values[i]});
  }
  return m;
}

MetricFamily Family(const std::string& name, const std::string& help, MetricType type,
                    const std::vector<std::string>& label_names, const Rows& rows) {
  MetricFamily f{name, help, type, {}};
  for (const auto& [key, value] : rows.rows()) {
    ClientMetric m = Metric(label_names, key);
    if (type == MetricType::Counter) {
      m.counter.value = value;
    } else {
      m.gauge.value = value;
    }
    f.metric.push_back(std::move(m));
  }
  return f;
}

ClientMetric HistogramMetric(const std::vector<std::string>& names, const Labels& values,
                             const BucketCounts& counts, const std::vector<double>& bounds) {
  ClientMetric m = Metric(names, values);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += i < counts.counts.size() ? counts.counts[i] : 0;
    const double le = i < bounds.size() ? bounds[i] : std::numeric_limits<double>::infinity();
    m.histogram.bucket.push_back({cumulative, le});
  }
  m.histogram.sample_count = counts.count;
  m.histogram.sample_sum = counts.sum;
  return m;
}

void AddHistograms(const NodeView& view, std::vector<MetricFamily>* out) {
  struct Merged {
    BucketCounts duration, size;
    std::array<BucketCounts, kSizeClassCount> duration_by_size;
  };
  std::map<std::pair<std::string, std::string>, Merged> merged;
  for (const HistogramRow& h : view.histograms) {
    Merged& m = merged[{h.comm, h.op}];
    m.duration.Add(h.duration_s);
    m.size.Add(h.size_bytes);
    for (size_t k = 0; k < kSizeClassCount; ++k) m.duration_by_size[k].Add(h.duration_by_size_s[k]);
  }
  MetricFamily duration{"ncclscope_operation_duration_seconds",
                        "Enqueue to device completion of completed operations",
                        MetricType::Histogram,
                        {}};
  MetricFamily size{"ncclscope_operation_size_bytes",
                    "Operation size (nccl-tests size convention, see docs/metrics.md)",
                    MetricType::Histogram,
                    {}};
  MetricFamily by_size{"ncclscope_operation_duration_by_size_seconds",
                       "Enqueue to device completion of completed operations, per size class "
                       "(nccl-tests size convention, see docs/metrics.md)",
                       MetricType::Histogram,
                       {}};
  const std::vector<std::string> co = {"comm", "op"};
  const std::vector<std::string> cos = {"comm", "op", "size"};
  for (const auto& [key, m] : merged) {
    // Operations issued but never completed (yet) have a size and no duration.
    if (m.duration.count > 0) {
      duration.metric.push_back(
          HistogramMetric(co, {key.first, key.second}, m.duration, DurationBucketsSeconds()));
    }
    size.metric.push_back(HistogramMetric(co, {key.first, key.second}, m.size, SizeBucketsBytes()));
    // Only the classes an operation was seen in: most run at one or two sizes.
    for (size_t k = 0; k < kSizeClassCount; ++k) {
      if (m.duration_by_size[k].count == 0) continue;
      by_size.metric.push_back(HistogramMetric(cos, {key.first, key.second, kSizeClasses[k]},
                                               m.duration_by_size[k],
                                               DurationBySizeBucketsSeconds()));
    }
  }
  out->push_back(std::move(duration));
  out->push_back(std::move(size));
  out->push_back(std::move(by_size));
}

void AddRankFamilies(const NodeView& view, std::vector<MetricFamily>* out) {
  Rows numerics_samples, numerics_nonfinite, numerics_skipped;
  Rows operations, bytes, accelerated, accel_stalls, inflight, issued, completed, lateness, score,
      progress, lost, up;
  Rows phase_operations, phase_seconds;
  std::map<std::string, Labels> info;                   // by rank: the newest process's labels
  std::map<std::string, std::optional<uint64_t>> step;  // by rank: the newest process's step
  for (const FileView& f : view.files) {
    for (const PhaseRow& p : f.phases) {
      phase_operations.Add({f.rank, p.comm, p.phase}, static_cast<double>(p.operations));
      phase_seconds.Add({f.rank, p.comm, p.phase}, p.seconds);
    }
    // A restarted rank that has not reached a step yet has none: not its predecessor's.
    step[f.rank] = f.step;
    for (const OpRow& o : f.ops) {
      operations.Add({f.rank, o.comm, o.op}, static_cast<double>(o.operations));
      bytes.Add({f.rank, o.comm, o.op}, static_cast<double>(o.bytes));
      // Every series of operations_total has its accelerated twin, at 0 where nothing was routed:
      // the share on ncclscope's kernels is one division, and a rate sees the first routed call.
      accelerated.Add({f.rank, o.comm, o.op}, static_cast<double>(o.accelerated));
    }
    for (const AccelStallRow& s : f.accel_stalls) {
      accel_stalls.Add({f.rank, s.comm}, static_cast<double>(s.stalls));
    }
    for (const NumericsRow& n : f.numerics) {
      numerics_samples.Add({f.rank, n.comm}, static_cast<double>(n.samples));
      numerics_nonfinite.Add({f.rank, n.comm}, static_cast<double>(n.nonfinite_inputs));
    }
    // Only where numerics are on (a sample or a miss): a job without them has no such series.
    if (!f.numerics.empty() || f.numerics_skipped > 0) {
      numerics_skipped.Add({f.rank}, static_cast<double>(f.numerics_skipped));
    }
    // Gauges of one rank come from its newest process only: a restarted rank's dead
    // predecessor must not add its stale in-flight work. Several communicators under one label
    // (the same name, or "other") keep the maximum.
    Rows this_file_inflight, this_file_issued, this_file_completed, this_file_late, this_file_score;
    for (const CommRow& c : f.comms) {
      this_file_inflight.Add({f.rank, c.comm}, static_cast<double>(c.inflight));
      this_file_issued.Max({f.rank, c.comm}, static_cast<double>(c.last_issued_seq));
      this_file_completed.Max({f.rank, c.comm}, static_cast<double>(c.last_completed_seq));
      this_file_late.Max({f.rank, c.comm}, c.lateness_s);
      this_file_score.Max({f.rank, c.comm}, c.straggler_score);
    }
    for (const auto& [k, v] : this_file_inflight.rows()) inflight.Set(k, v);
    for (const auto& [k, v] : this_file_issued.rows()) issued.Set(k, v);
    for (const auto& [k, v] : this_file_completed.rows()) completed.Set(k, v);
    for (const auto& [k, v] : this_file_late.rows()) lateness.Set(k, v);
    for (const auto& [k, v] : this_file_score.rows()) score.Set(k, v);
    if (f.last_progress_s > 0) progress.Max({f.rank}, f.last_progress_s);
    for (size_t i = 0; i < kLostReasonCount; ++i) {
      lost.Add({f.rank, kLostReasons[i]}, static_cast<double>(f.lost[i]));
    }
    up.Set({f.rank}, f.up ? 1 : 0);
    info[f.rank] = {f.rank, f.local_rank, f.world_size, f.host, f.gpu_uuid, f.job_id};
  }
  Rows info_rows;
  for (const auto& [rank, labels] : info) info_rows.Set(labels, 1);
  Rows step_rows;
  for (const auto& [rank, s] : step) {
    if (s) step_rows.Set({rank}, static_cast<double>(*s));
  }

  const std::vector<std::string> rco = {"rank", "comm", "op"};
  const std::vector<std::string> rc = {"rank", "comm"};
  out->push_back(Family("ncclscope_operations_total",
                        "Operations (collectives and send/recv) issued and accepted by NCCL",
                        MetricType::Counter, rco, operations));
  out->push_back(Family("ncclscope_operation_bytes_total",
                        "Bytes of those operations (nccl-tests size convention)",
                        MetricType::Counter, rco, bytes));
  out->push_back(Family("ncclscope_accelerated_operations_total",
                        "Of those operations, the ones run by ncclscope's own kernels "
                        "(NCCLSCOPE_ACCEL=1); the rest ran on NCCL",
                        MetricType::Counter, rco, accelerated));
  out->push_back(Family("ncclscope_accel_stalls_total",
                        "Kernels of ncclscope's that gave up waiting for a peer (accel_stall "
                        "records); the communicator's later calls go to NCCL",
                        MetricType::Counter, rc, accel_stalls));
  out->push_back(Family("ncclscope_numerics_samples_total",
                        "Sampled collectives NCCLSCOPE_NUMERICS scanned or hashed (numerics "
                        "records)",
                        MetricType::Counter, rc, numerics_samples));
  out->push_back(Family("ncclscope_numerics_nonfinite_inputs_total",
                        "Of those, the ones whose input held NaN or Inf on this rank",
                        MetricType::Counter, rc, numerics_nonfinite));
  out->push_back(Family("ncclscope_numerics_skipped_total",
                        "Sampled collectives whose numerics passes could not run or report "
                        "(the ring header's numerics_skipped)",
                        MetricType::Counter, {"rank"}, numerics_skipped));
  out->push_back(Family("ncclscope_inflight_operations",
                        "Operations issued and not yet completed on the device", MetricType::Gauge,
                        rc, inflight));
  out->push_back(Family("ncclscope_last_issued_sequence",
                        "Newest collective sequence number issued", MetricType::Gauge, rc, issued));
  out->push_back(Family("ncclscope_last_completed_sequence",
                        "Newest collective sequence number completed on the device",
                        MetricType::Gauge, rc, completed));
  out->push_back(Family("ncclscope_last_progress_timestamp_seconds",
                        "Unix time of the rank's newest device completion", MetricType::Gauge,
                        {"rank"}, progress));
  out->push_back(Family("ncclscope_arrival_lateness_seconds",
                        "Median over the newest 64 complete collectives of how much later this "
                        "rank arrived than the other members (0 = on time)",
                        MetricType::Gauge, rc, lateness));
  out->push_back(Family("ncclscope_straggler_score",
                        "Arrival lateness as a fraction of the median collective duration, 0-1",
                        MetricType::Gauge, rc, score));
  out->push_back(Family("ncclscope_records_lost_total",
                        "Records and communicators the probe could not keep", MetricType::Counter,
                        {"rank", "reason"}, lost));
  out->push_back(Family("ncclscope_rank_up",
                        "1 while the process writing the ring is alive, 0 once it has ended",
                        MetricType::Gauge, {"rank"}, up));
  out->push_back(
      Family("ncclscope_rank_info", "Always 1: joins ranks with dcgm-exporter (Hostname, UUID)",
             MetricType::Gauge, {"rank", "local_rank", "world_size", "Hostname", "UUID", "job_id"},
             info_rows));
  // NVTX (docs/nvtx.md): no family at all for a job whose calls carry no context.
  if (!phase_operations.rows().empty()) {
    const std::vector<std::string> rcp = {"rank", "comm", "phase"};
    out->push_back(Family("ncclscope_phase_operations_total",
                          "Completed operations by the NVTX phase they were called in (none: "
                          "outside any phase; other: a phase past the first 8 names)",
                          MetricType::Counter, rcp, phase_operations));
    out->push_back(Family("ncclscope_phase_operation_seconds_total",
                          "Enqueue to device completion of those operations, summed",
                          MetricType::Counter, rcp, phase_seconds));
  }
  if (!step_rows.rows().empty()) {
    out->push_back(Family("ncclscope_rank_step",
                          "NVTX step of the rank's newest operation made inside a step range",
                          MetricType::Gauge, {"rank"}, step_rows));
  }
}

// Verdicts of one view: `scope` "node" (this node's ring files) or "job" (the job correlated from
// every node's digest, on the exporter that correlates).
void AddVerdictRows(const std::string& scope, const std::vector<VerdictRow>& rows, Rows* verdict,
                    Rows* verdict_age, Rows* confirm_after) {
  for (const VerdictRow& v : rows) {
    verdict->Set({v.cls, v.comm, v.rank, v.stage, scope}, 1);
    verdict_age->Max({v.cls, v.comm, v.stage, scope}, v.age_s);
    // Several suspects under one (class, comm): the first of them to be confirmed.
    if (v.stage == "suspect") {
      confirm_after->Min({v.cls, v.comm, v.stage, scope}, v.confirm_after_s);
    }
  }
}

void AddIncidents(const std::string& scope, const IncidentCounts& counts, Rows* incidents) {
  // Every series from the start, at 0: increase() then sees the first incident.
  incidents->Set({"suspect", "resolved", scope}, static_cast<double>(counts.suspect_resolved));
  incidents->Set({"hang", "confirmed", scope}, static_cast<double>(counts.hang_confirmed));
  incidents->Set({"hang", "resolved", scope}, static_cast<double>(counts.hang_resolved));
}

void AddVerdictFamilies(const NodeView& view, std::vector<MetricFamily>* out) {
  Rows verdict, verdict_age, confirm_after, incidents, seen, world;
  AddVerdictRows("node", view.verdicts, &verdict, &verdict_age, &confirm_after);
  if (view.incidents) AddIncidents("node", *view.incidents, &incidents);
  if (view.ranks_seen >= 0) seen.Set({"node"}, view.ranks_seen);
  if (view.world_size > 0) world.Set({"node"}, view.world_size);
  // Job incidents from the start on every exporter with peers (counters at 0 until it
  // correlates); the rest of the job view only where it correlates.
  if (view.job && view.job->incidents) AddIncidents("job", *view.job->incidents, &incidents);
  if (view.job && view.job->correlating) {
    AddVerdictRows("job", view.job->verdicts, &verdict, &verdict_age, &confirm_after);
    if (view.job->ranks_seen >= 0) seen.Set({"job"}, view.job->ranks_seen);
    if (view.job->world_size > 0) world.Set({"job"}, view.job->world_size);
  }
  out->push_back(Family("ncclscope_verdict",
                        "1 for each culprit rank of each current correlator verdict; stage: "
                        "suspect (not confirmed yet, never pages), hang (confirmed), straggler or "
                        "numerics (nan-origin, corrupt-output); "
                        "scope: node (this node's ranks) or job (every node's, correlating "
                        "exporter only)",
                        MetricType::Gauge, {"class", "comm", "rank", "stage", "scope"}, verdict));
  out->push_back(Family("ncclscope_verdict_age_seconds",
                        "How long the verdict's victims have waited", MetricType::Gauge,
                        {"class", "comm", "stage", "scope"}, verdict_age));
  out->push_back(Family("ncclscope_verdict_confirm_after_seconds",
                        "A suspect: the wait (verdict age) at which it becomes a confirmed hang "
                        "unless it resolves first",
                        MetricType::Gauge, {"class", "comm", "stage", "scope"}, confirm_after));
  out->push_back(Family("ncclscope_ranks_seen",
                        "Distinct ranks of the job the correlator had data of (scope node: this "
                        "node's files; job: every reachable node's digest)",
                        MetricType::Gauge, {"scope"}, seen));
  out->push_back(Family("ncclscope_world_size", "Ranks of the job, as its ring headers say",
                        MetricType::Gauge, {"scope"}, world));
  if (!view.incidents && !(view.job && view.job->incidents)) return;
  out->push_back(Family("ncclscope_incidents_total",
                        "Hang incidents by stage and outcome: suspects that resolved by "
                        "themselves, hangs confirmed, confirmed hangs that went away; scope as "
                        "ncclscope_verdict",
                        MetricType::Counter, {"stage", "outcome", "scope"}, incidents));
}

// The exporter's part in the job view: its role, and the peers it looked at.
void AddPeerFamilies(const JobView& job, std::vector<MetricFamily>* out) {
  Rows role, up, last, fetch, clashes;
  clashes.Set({}, static_cast<double>(job.clashes));
  role.Set({"correlating"}, job.correlating ? 1 : 0);
  role.Set({"serving"}, job.correlating ? 0 : 1);
  for (const PeerRow& p : job.peers) {
    up.Set({p.peer}, p.up ? 1 : 0);
    if (p.last_success_s > 0) last.Set({p.peer}, p.last_success_s);
    fetch.Set({p.peer}, p.fetch_s);
  }
  out->push_back(Family("ncclscope_exporter_role",
                        "1 for this exporter's role in its job: correlating (it fetches every "
                        "peer's digest and serves the job view) or serving (a node before it in "
                        "the order correlates)",
                        MetricType::Gauge, {"role"}, role));
  out->push_back(Family("ncclscope_peer_up",
                        "1 when the peer exporter answered this exporter's last look, 0 when it "
                        "did not (its ranks are unseen in the job view)",
                        MetricType::Gauge, {"peer"}, up));
  out->push_back(Family("ncclscope_peer_last_success_timestamp_seconds",
                        "Unix time of the peer's last answer", MetricType::Gauge, {"peer"}, last));
  out->push_back(Family("ncclscope_peer_fetch_seconds",
                        "Duration of the last fetch of the peer's digest (or health check)",
                        MetricType::Gauge, {"peer"}, fetch));
  out->push_back(Family("ncclscope_peer_clashes",
                        "Problems among the job view's sources: another exporter calling itself "
                        "by this exporter's host name, ranks two sources hold from different "
                        "processes (each said once on stderr)",
                        MetricType::Gauge, {}, clashes));
}

void AddNodeFamilies(const NodeView& view, std::vector<MetricFamily>* out) {
  Rows comm_ranks;
  for (const auto& [comm, n] : view.comm_ranks) comm_ranks.Max({comm}, n);
  out->push_back(Family("ncclscope_communicator_ranks", "Ranks in the communicator",
                        MetricType::Gauge, {"comm"}, comm_ranks));
  AddVerdictFamilies(view, out);
  if (view.job) AddPeerFamilies(*view.job, out);
  Rows files, errors, missed, build;
  files.Set({}, static_cast<double>(view.ring_files));
  errors.Set({}, static_cast<double>(view.read_errors));
  missed.Set({"overwritten"}, static_cast<double>(view.missed_overwritten));
  missed.Set({"torn"}, static_cast<double>(view.missed_torn));
  build.Set({view.version}, 1);
  out->push_back(
      Family("ncclscope_exporter_ring_files", "Ring files read", MetricType::Gauge, {}, files));
  out->push_back(Family("ncclscope_exporter_read_errors_total",
                        "Ring files that could not be read at a scrape", MetricType::Counter, {},
                        errors));
  out->push_back(Family("ncclscope_exporter_records_missed_total",
                        "Records the exporter never read: overwritten before it got to them, or "
                        "left mid-write by a writer that died",
                        MetricType::Counter, {"reason"}, missed));
  out->push_back(Family("ncclscope_build_info", "Always 1", MetricType::Gauge, {"version"}, build));
}

}  // namespace

std::vector<MetricFamily> RenderFamilies(const NodeView& view) {
  std::vector<MetricFamily> out;
  AddRankFamilies(view, &out);
  AddHistograms(view, &out);
  AddNodeFamilies(view, &out);
  return out;
}

}  // namespace ncclscope::exporters
