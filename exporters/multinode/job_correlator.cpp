#include "exporters/multinode/job_correlator.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <map>
#include <utility>

#include "exporters/multinode/digest_fetch.h"
#include "exporters/multinode/digest_file.h"
#include "exporters/multinode/digest_job.h"
#include "hang_detector/verdicts/verdict_json.h"
#include "trace/clock.h"

namespace ncclscope::exporters {
namespace {

// Only the header of a ring: which rank wrote it.
class RankOf final : public trace::RingVisitor {
 public:
  void BeginFile(const trace::RingInfo& info) override {
    rank = info.global_rank;
    host = info.host;
  }
  void Records(const trace::StoredRecord* /*batch*/, size_t /*n*/) override {}
  void EndFile(const trace::RingInfo& /*info*/) override {}
  int rank = -1;
  std::string host;
};

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// What makes two job views "the same verdict" for the file: class, place, stage, culprits and the
// ranks seen, not the growing wait times.
std::string VerdictKey(const hang_detector::Analysis& a) {
  std::string key = std::to_string(a.input.ranks_seen) + "/" + std::to_string(a.input.world_size);
  for (const hang_detector::Verdict& v : a.verdicts) {
    key += std::string(";") + hang_detector::VerdictClassName(v.cls) + " " +
           std::to_string(v.comm_id) + " " + v.op + " " + std::to_string(v.seq) + " " +
           (v.confirmed ? "c" : "s") + " [";
    for (const int r : v.culprits) key += std::to_string(r) + ",";
    key += "]";
  }
  return key;
}

}  // namespace

JobCorrelator::JobCorrelator(RingSource* local, const hang_detector::ProcessProbe* probe,
                             JobCorrelatorOptions options)
    : local_(local), probe_(probe), options_(std::move(options)) {}

void JobCorrelator::Discover() {
  std::vector<std::string> errors;
  const std::vector<PeerUrl> urls = ResolvePeers(options_.peers, options_.fetch_timeout_s, &errors);
  std::map<std::string, Peer> old;
  for (Peer& p : peers_) old.emplace(p.url.base, std::move(p));
  peers_.clear();
  for (const PeerUrl& u : urls) {
    const auto it = old.find(u.base);
    if (it != old.end()) {
      peers_.push_back(std::move(it->second));
      old.erase(it);
      continue;
    }
    Peer p;
    p.url = u;
    p.metrics.label = u.label;
    peers_.push_back(std::move(p));
  }
  // A lookup that failed (DNS, Prometheus down for a moment) says nothing about the peers it
  // found before: they stay until a lookup succeeds without them.
  if (!errors.empty()) {
    for (auto& [base, p] : old) peers_.push_back(std::move(p));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (errors != status_.discovery_errors) {
    for (const std::string& e : errors) std::cerr << "ncclscope exporter: peers: " << e << "\n";
  }
  status_.discovery_errors = std::move(errors);
}

NodeKey JobCorrelator::OwnKey(SourceFacts* facts) {
  NodeKey key;
  key.host = probe_->ThisHost();
  key.instance = options_.instance;
  *facts = {};
  facts->label = "this node's ring files";
  facts->host = key.host;
  facts->instance = options_.instance;
  std::set<int> ranks;
  std::set<std::string> hosts;
  std::string error;
  for (const std::string& name : local_->List(&error)) {
    RankOf r;
    std::string why;
    // From the newest possible index: the header and no record.
    if (!local_->Visit(name, std::numeric_limits<uint64_t>::max(), &r, &why)) continue;
    if (!r.host.empty()) hosts.insert(r.host);
    if (r.rank < 0) continue;
    ranks.insert(r.rank);
    if (key.lowest_rank < 0 || r.rank < key.lowest_rank) key.lowest_rank = r.rank;
  }
  facts->ranks.assign(ranks.begin(), ranks.end());
  facts->file_hosts.assign(hosts.begin(), hosts.end());
  return key;
}

bool JobCorrelator::IsSelf(const SourceReport& report) const {
  // A digest without an id (an older producer) can be told by its host name only.
  if (report.instance != 0 && options_.instance != 0) return report.instance == options_.instance;
  return report.host == probe_->ThisHost();
}

void JobCorrelator::Warn(const std::vector<SourceProblem>& problems) {
  for (const SourceProblem& p : problems) {
    if (said_.insert(p.key).second) std::cerr << "ncclscope exporter: warning: " << p.line << "\n";
  }
}

void JobCorrelator::ReadLocal(std::vector<hang_detector::RankFile>* files,
                              std::vector<std::string>* errors) {
  std::string error;
  const std::vector<std::string> names = local_->List(&error);
  if (!error.empty()) errors->push_back(error);
  for (const std::string& name : names) {
    hang_detector::RankFile f;
    hang_detector::RankFileBuilder builder(&f);
    std::string why;
    if (local_->Visit(name, 0, &builder, &why)) {
      files->push_back(std::move(f));
    } else {
      errors->push_back(why);
    }
  }
}

std::shared_ptr<const hang_detector::Analysis> JobCorrelator::Cycle() {
  const int64_t now = SteadyNs();
  if (discovered_at_ns_ == 0 ||
      static_cast<double>(now - discovered_at_ns_) >= options_.rediscover_s * trace::kNsPerS) {
    Discover();
    discovered_at_ns_ = now;
  }
  SourceFacts own;
  const NodeKey self = OwnKey(&own);
  const auto views = [this] {
    std::vector<PeerView> v;
    v.reserve(peers_.size());
    for (const Peer& p : peers_) v.push_back(p.view);
    return v;
  };
  for (Peer& p : peers_) p.metrics.looked_at = false;

  // Fetches `which` peers (their digest, or /healthz) and notes what each answered; the digests
  // come back assembled (job->per_source in the order of `which`).
  const auto look = [this, &own](const std::vector<size_t>& which, bool digest,
                                 std::vector<hang_detector::RankFile> local,
                                 std::vector<std::string> local_errors, DigestJob* job) {
    std::vector<DigestSource> sources;
    for (const size_t i : which) {
      sources.push_back(
          {DigestSource::Kind::kUrl, peers_[i].url.base + (digest ? "/digest" : "/healthz")});
    }
    FetchOptions fetch;
    fetch.timeout_s = options_.fetch_timeout_s;
    const std::vector<FetchedDigest> fetched = FetchDigests(sources, fetch);
    if (digest) {
      AssembleFetchedJob({std::move(local), std::move(local_errors), own}, fetched, options_.job,
                         fetch.max_bytes, job);
    }
    const double wall_s = static_cast<double>(trace::RealtimeNs()) / trace::kNsPerS;
    for (size_t k = 0; k < which.size(); ++k) {
      Peer& p = peers_[which[k]];
      bool ok = fetched[k].ok;
      if (digest) {
        const SourceReport& r = job->per_source[k];
        ok = r.ok;
        if (ok) {
          p.view.key.host = r.host;
          p.view.key.instance = r.instance;
          p.view.key.lowest_rank = r.ranks.empty() ? -1 : r.ranks.front();
          p.view.self = IsSelf(r);
          p.ranks = r.ranks;
        }
      }
      p.view.reachable = ok;
      p.metrics.up = ok;
      p.metrics.looked_at = true;
      p.metrics.fetch_s = fetched[k].round_trip_s;
      p.metrics.lowest_rank = p.view.key.lowest_rank;
      if (ok) p.metrics.last_success_s = wall_s;
    }
  };

  bool correlate = ShouldCorrelate(self, views());
  if (!correlate) {
    std::vector<size_t> health, digests;
    for (size_t i = 0; i < peers_.size(); ++i) {
      const Look l = LookAt(self, peers_[i].view);
      if (l == Look::kHealth) health.push_back(i);
      if (l == Look::kDigest) digests.push_back(i);
    }
    DigestJob unused;
    if (!health.empty()) look(health, false, {}, {}, &unused);
    if (!digests.empty()) look(digests, true, {}, {}, &unused);
    correlate = ShouldCorrelate(self, views());
  }
  std::shared_ptr<hang_detector::Analysis> analysis;
  DigestJob job;
  bool assembled = false;
  if (correlate) {
    std::vector<size_t> all;
    for (size_t i = 0; i < peers_.size(); ++i) {
      if (!peers_[i].view.self) all.push_back(i);
    }
    std::vector<hang_detector::RankFile> files;
    std::vector<std::string> errors;
    ReadLocal(&files, &errors);
    look(all, true, std::move(files), std::move(errors), &job);
    assembled = true;
    // A peer's place learnt only now (its first answer) may put it before this node.
    correlate = ShouldCorrelate(self, views());
    if (correlate && job.index) {
      hang_detector::AnalyzeOptions options = options_.analyze;
      options.now_wall_ns = trace::RealtimeNs();
      options.probe = probe_;
      analysis = std::make_shared<hang_detector::Analysis>(Analyze(*job.index, options));
      for (const size_t i : all) {
        if (!peers_[i].view.reachable) {
          analysis->input.notes.push_back("peer " + peers_[i].url.label +
                                          " unreachable: its ranks are unseen");
        }
      }
      if (!analysis->usable) {
        analysis.reset();
      } else {
        WriteVerdict(*analysis);
      }
    }
  }
  if (!role_said_ || correlate != was_correlating_) {
    std::cerr << "ncclscope exporter: "
              << (correlate ? "this node correlates the job (" + std::to_string(peers_.size()) +
                                  " peer(s))"
                            : std::string("serving only: a node before this one correlates"))
              << std::endl;
    role_said_ = true;
    was_correlating_ = correlate;
  }
  // What clashes: every peer's digest was just read, or else what the peers' last digests said of
  // their host names (a serving node reads no peer's ranks after it has placed them).
  std::vector<SourceProblem> problems = std::move(job.problems);
  if (!assembled) {
    std::vector<SourceFacts> facts = {own};
    facts[0].local = true;
    for (const Peer& p : peers_) {
      if (p.view.self || p.view.key.host.empty()) continue;
      facts.push_back(
          {p.url.base + "/digest", p.view.key.host, p.view.key.instance, false, p.ranks, {}});
    }
    problems = FindHostClashes(facts);
  }
  Warn(problems);
  JobStatus status;
  status.correlating = correlate;
  status.clashes = problems.size();
  for (const Peer& p : peers_) {
    if (!p.view.self) status.peers.push_back(p.metrics);
  }
  if (analysis != nullptr) {
    status.ranks_seen = analysis->input.ranks_seen;
    status.world_size = analysis->input.world_size;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  status.discovery_errors = std::move(status_.discovery_errors);
  status_ = std::move(status);
  return analysis;
}

void JobCorrelator::WriteVerdict(const hang_detector::Analysis& analysis) {
  if (options_.verdict_path.empty()) return;
  const std::string key = VerdictKey(analysis);
  if (key == written_key_) return;
  std::string error;
  if (!WriteFileAtomically(options_.verdict_path, hang_detector::RenderJson(analysis) + "\n",
                           &error)) {
    if (error != write_error_) std::cerr << "ncclscope exporter: job verdict: " << error << "\n";
    write_error_ = error;
    return;
  }
  written_key_ = key;
  write_error_.clear();
}

JobStatus JobCorrelator::Status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

}  // namespace ncclscope::exporters
