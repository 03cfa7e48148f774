#include "exporters/prometheus/exporter.h"

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "exporters/multinode/job_correlator.h"
#include "exporters/multinode/node_digest.h"
#include "exporters/prometheus/http_endpoint.h"
#include "exporters/prometheus/metrics_collectable.h"
#include "exporters/prometheus/node_aggregator.h"
#include "exporters/prometheus/verdict_poller.h"
#include "exporters/sources/ring_source.h"
#include "hang_detector/decision/correlator.h"
#include "hang_detector/ingest/process_probe.h"

namespace ncclscope::exporters {

int RunExporter(const ExporterOptions& options) {
  // Blocked before any thread starts, so every thread inherits the mask and the signals wait
  // for sigwait below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const auto probe = hang_detector::MakeLinuxProcessProbe();
  DirRingSource source(options.dir, options.this_host_only ? probe->ThisHost() : "", options.job);
  AggregatorOptions aggregator_options;
  aggregator_options.probe = probe.get();
  aggregator_options.version = options.version;
  NodeAggregator aggregator(&source, aggregator_options);
  hang_detector::AnalyzeOptions analyze;
  analyze.stall_s = options.stall_s;
  analyze.confirm_floor_s = options.confirm_floor_s;
  analyze.confirm_factor = options.confirm_factor;
  analyze.confirm_ceiling_s = options.confirm_ceiling_s;
  VerdictPoller verdicts(AnalyzeTraceDir(options.dir, analyze, options.job),
                         options.verdict_interval_s);
  const bool with_peers = !options.peers.empty() || !options.peers_from.empty();
  std::unique_ptr<JobCorrelator> job;
  std::unique_ptr<VerdictPoller> job_verdicts;
  if (with_peers) {
    // Created before the endpoint (the collectable points at them), started after the peers are
    // known: the default port is the one bound.
    job_verdicts =
        std::make_unique<VerdictPoller>([&job] { return job->Cycle(); }, options.correlate_every_s);
  }
  // The job correlator is made once the port is known; the collectable reads it through this.
  auto collectable = std::make_shared<MetricsCollectable>(&aggregator, &verdicts);
  // The ranks /metrics shows, for correlators on other machines (docs/digest.md), with this
  // exporter's id: what tells its own digest from another's with the same host name.
  const uint64_t instance = DrawInstanceId();
  DigestCache digest(&source, probe.get(), {}, instance);

  std::string error;
  const auto endpoint =
      HttpEndpoint::Start(options.listen, collectable, &error, [&digest] { return digest.Get(); });
  if (endpoint == nullptr) {
    std::cerr << "ncclscope exporter: " << error << "\n";
    return kExporterCannotListen;
  }
  if (with_peers) {
    JobCorrelatorOptions job_options;
    if (!ParsePeerOptions(options.peers, options.peers_from, endpoint->port(), std::getenv,
                          &job_options.peers, &error)) {
      std::cerr << "ncclscope exporter: " << error << "\n";
      std::_Exit(kExporterBadPeers);
    }
    job_options.fetch_timeout_s = options.peer_timeout_s;
    job_options.analyze = analyze;
    job_options.job = options.job;
    job_options.instance = instance;
    job_options.verdict_path =
        options.job_verdict_file.value_or(options.dir + "/" + kJobVerdictFile);
    job = std::make_unique<JobCorrelator>(&source, probe.get(), std::move(job_options));
    collectable->SetJobView(job_verdicts.get(), job.get());
    job_verdicts->Start();
  }
  verdicts.Start();
  std::cerr << "ncclscope exporter: serving /metrics, /digest and /healthz on port "
            << endpoint->port() << " (listen " << options.listen << ") for ring files in "
            << options.dir << std::endl;
  int signal = 0;
  sigwait(&stop_signals, &signal);
  // The exporter only reads, so nothing is lost by skipping the teardown, and an orderly one waits
  // out CivetWeb's 2 s poll: ending here frees the port at once and lets `ncclscope run` end with
  // its job.
  std::cerr << "ncclscope exporter: stopped by signal " << signal << std::endl;
  std::_Exit(kExporterOk);
}

}  // namespace ncclscope::exporters
