// Where an exporter finds the other exporters of its job (`ncclscope exporter --peers`,
// `--peers-from`; exporters/README.md, "One job across many nodes"): exporters named outright
// (URL, host[:port], a hostfile), the launcher's node list (Slurm), the addresses of a DNS name
// (a Kubernetes headless service) or the active targets of the Prometheus that scrapes them.
// Parsing is pure; resolving reads DNS and HTTP. Functions are thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ncclscope::exporters {

// A peer exporter as fetched: "http://host:port" (no path; IPv6 hosts in brackets).
struct PeerUrl {
  std::string base;   // "http://host:port"
  std::string label;  // "host:port": the `peer` label of the metrics
};

// The peers as the options name them, checked but not resolved.
struct PeerPlan {
  std::vector<PeerUrl> fixed;  // --peers values and Slurm's node list: known at start
  struct Dns {
    std::string name;
    int port = 0;
  };
  std::vector<Dns> dns;  // --peers-from dns:NAME[:PORT]: every address, resolved again each time
  struct Prometheus {
    std::string api;  // "http://prom:9090" (no trailing slash)
    std::string job;  // the scrape job whose active targets are the exporters
  };
  std::vector<Prometheus> prometheus;  // --peers-from prometheus:URL[:JOB]
  bool empty() const { return fixed.empty() && dns.empty() && prometheus.empty(); }
};

// The scrape job `--peers-from prometheus:URL` looks for without ":JOB"
// (dashboards/prometheus/prometheus.example.yml).
inline constexpr char kDefaultPrometheusJob[] = "ncclscope";

using EnvLookup = std::function<const char*(const char*)>;

// Checks and sorts the option values: --peers (an http:// URL, its path dropped; a hostfile: an
// existing file of host[:port] lines, '#' comments; else host[:port]) and --peers-from (`slurm`:
// SLURM_JOB_NODELIST, else SLURM_NODELIST, expanded; `dns:NAME[:PORT]`;
// `prometheus:URL[:JOB]`). A host without a port gets `default_port` (the exporter's own). Returns
// false with *error naming the option, the value and what is wrong. Reads hostfiles and `env`.
bool ParsePeerOptions(const std::vector<std::string>& peers,
                      const std::vector<std::string>& peers_from, int default_port,
                      const EnvLookup& env, PeerPlan* plan, std::string* error);

// One host[:port] (IPv6 in brackets) as a peer, `default_port` when it has none; false when it is
// not one.
bool ParseHostPort(const std::string& text, int default_port, PeerUrl* out);

// The active targets of `job` in the body of Prometheus' GET /api/v1/targets, as peers (their
// scrapeUrl's host and port). False with *error when the body is not such an answer.
bool ParsePrometheusTargets(const std::string& body, const std::string& job,
                            std::vector<PeerUrl>* out, std::string* error);

// Every peer of the plan now: the fixed ones, then each DNS name's addresses (getaddrinfo) and
// each Prometheus' targets (HTTP, timeout_s), duplicates removed, in order. A source that cannot
// be resolved adds one line to *errors and no peer.
std::vector<PeerUrl> ResolvePeers(const PeerPlan& plan, double timeout_s,
                                  std::vector<std::string>* errors);

}  // namespace ncclscope::exporters
