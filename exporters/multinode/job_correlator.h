// The job view of a node exporter with peers (exporters/README.md, "One job across many nodes"):
// each cycle it decides by peer_election.h whether this node correlates; if so it fetches every
// peer's digest in parallel (digest_fetch.h), adds this node's ring files, correlates them as one
// job (digest_job.h) and returns the analysis; otherwise it only looks at the peers before it
// (health checks) and returns null. Its Cycle is the AnalyzeFn of a VerdictPoller, so scrapes read
// a cached answer; Status() tells the scrape the role and the peers.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "exporters/multinode/peer_election.h"
#include "exporters/multinode/peer_sources.h"
#include "exporters/multinode/source_clashes.h"
#include "exporters/sources/ring_source.h"
#include "hang_detector/decision/correlator.h"
#include "hang_detector/ingest/process_probe.h"

namespace ncclscope::exporters {

struct SourceReport;  // digest_job.h

struct JobCorrelatorOptions {
  PeerPlan peers;
  double fetch_timeout_s = 1;             // each peer's fetch, connection included
  double rediscover_s = 30;               // DNS names and Prometheus targets are looked up again
  hang_detector::AnalyzeOptions analyze;  // thresholds; clock and probe are set per cycle
  std::string job;                        // the job id to keep; empty: the newest heartbeat's
  // Where the correlating exporter writes the job view (analyze --json's document) whenever its
  // verdicts change: atomically, mode 0600. Empty: nowhere.
  std::string verdict_path;
  // The instance id this exporter's /digest carries (DrawInstanceId): its own digest is the one
  // with it. 0: recognised by host name alone.
  uint64_t instance = 0;
};

// One peer as /metrics shows it.
struct PeerMetrics {
  std::string label;  // host:port
  bool up = false;
  bool looked_at = false;     // fetched or checked in the last cycle
  double last_success_s = 0;  // Unix time of its last answer, 0 when none
  double fetch_s = 0;         // the last fetch's or check's duration
  int lowest_rank = -1;
};

struct JobStatus {
  bool correlating = false;
  std::vector<PeerMetrics> peers;  // in discovery order; this node itself left out
  int ranks_seen = 0;              // of the job view (correlating only)
  int world_size = -1;
  std::vector<std::string> discovery_errors;  // the last lookup's, one line each
  // Host names and ranks two sources claim (source_clashes.h), as the last cycle found them: the
  // correlating exporter's from its fetch of every peer, a serving one's from what the peers'
  // digests said of their hosts.
  size_t clashes = 0;
};

class JobCorrelator {
 public:
  // `local` (this node's ring files) and `probe` must outlive it.
  JobCorrelator(RingSource* local, const hang_detector::ProcessProbe* probe,
                JobCorrelatorOptions options);

  // One cycle; the job analysis when this node correlates, else null. Called by one thread at a
  // time (the poller's); Status may be called concurrently.
  std::shared_ptr<const hang_detector::Analysis> Cycle();
  JobStatus Status() const;

 private:
  struct Peer {
    PeerUrl url;
    PeerView view;
    PeerMetrics metrics;
    std::vector<int> ranks;  // from its last digest
  };
  void Discover();
  // This node's place, and what it says of itself to the clash checks (its host name, instance,
  // ranks and the host names its ring files carry).
  NodeKey OwnKey(SourceFacts* facts);
  bool IsSelf(const SourceReport& report) const;
  // Says each problem not said before on stderr, once.
  void Warn(const std::vector<SourceProblem>& problems);
  void ReadLocal(std::vector<hang_detector::RankFile>* files, std::vector<std::string>* errors);
  void WriteVerdict(const hang_detector::Analysis& analysis);

  RingSource* local_;
  const hang_detector::ProcessProbe* probe_;
  JobCorrelatorOptions options_;
  std::vector<Peer> peers_;  // the poller's thread only
  int64_t discovered_at_ns_ = 0;
  bool role_said_ = false;
  bool was_correlating_ = false;
  std::string written_key_;     // what the verdict file holds, so it is rewritten only on a change
  std::string write_error_;     // the last failure said on stderr, so it is said once
  std::set<std::string> said_;  // keys of the clashes said on stderr
  mutable std::mutex mutex_;
  JobStatus status_;  // under mutex_
};

}  // namespace ncclscope::exporters
