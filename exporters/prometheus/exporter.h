// `ncclscope exporter`: one process per node that serves the metrics of every ring file of a trace
// directory until SIGINT/SIGTERM.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hang_detector/decision/correlator.h"

namespace ncclscope::exporters {

// Not in the Prometheus ecosystem's well-known ports near it: node_exporter 9100, dcgm-exporter
// 9400, OpenTelemetry's Prometheus exporter 9464.
inline constexpr char kDefaultListen[] = "0.0.0.0:9478";
// The job view as `analyze --json` writes it, in the node directory of the correlating exporter.
inline constexpr char kJobVerdictFile[] = "verdict-job.json";

struct ExporterOptions {
  std::string dir;
  std::string listen = kDefaultListen;
  double verdict_interval_s = 2.0;  // correlator runs
  double stall_s = 2.0;             // a wait longer than this is a hang (AnalyzeOptions::stall_s)
  // When a suspect becomes a confirmed hang: AnalyzeOptions::confirm_* (same defaults).
  double confirm_floor_s = hang_detector::AnalyzeOptions{}.confirm_floor_s;
  double confirm_factor = hang_detector::AnalyzeOptions{}.confirm_factor;
  double confirm_ceiling_s = hang_detector::AnalyzeOptions{}.confirm_ceiling_s;
  bool this_host_only = false;  // serve only the ring files this host wrote (shared dirs)
  std::string job;  // serve and correlate this job's ring files; empty: the newest heartbeat's
  std::string version;
  // The job view (exporters/README.md, "One job across many nodes"): the other exporters of the
  // job (peer_sources.h); without any, the exporter serves its node's view only.
  std::vector<std::string> peers;       // --peers
  std::vector<std::string> peers_from;  // --peers-from
  double correlate_every_s = 1.0;       // the job correlator's cycle
  double peer_timeout_s = 1.0;          // each peer's fetch or health check
  // Where the correlating exporter writes the job view when it changes; "" none. Default (unset):
  // verdict-job.json in --dir.
  std::optional<std::string> job_verdict_file;
};

// Exit codes of RunExporter.
inline constexpr int kExporterOk = 0;
inline constexpr int kExporterCannotListen = 3;
inline constexpr int kExporterBadPeers = 3;

// Blocks SIGINT and SIGTERM and serves until one arrives, then ends the process at once with exit
// code 0 (no teardown: it only reads); returns kExporterCannotListen (with one line on stderr)
// when the address cannot be bound, or when a peer option is bad (one line naming it). Prints the
// address it serves on stderr.
// Call from the main thread, once.
int RunExporter(const ExporterOptions& options);

}  // namespace ncclscope::exporters
