// `ncclscope exporter [--dir D] [--listen ADDR:PORT]`: serves the metrics of every ring file of a
// trace directory on GET /metrics (docs/metrics.md) until SIGINT/SIGTERM. Exit code 3 when no
// directory is given (neither --dir nor $NCCLSCOPE_DIR) or the address cannot be bound.
#include <cstdlib>
#include <iostream>
#include <memory>

#include "exporters/prometheus/exporter.h"
#include "tools/commands.h"

namespace ncclscope::tools {

void RegisterExporterCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "exporter",
      "Serve Prometheus metrics of every ring file of a trace directory (one per node)");
  auto o = std::make_shared<exporters::ExporterOptions>();
  if (const char* dir = std::getenv("NCCLSCOPE_DIR"); dir != nullptr) o->dir = dir;
  // Not required() for CLI11: $NCCLSCOPE_DIR may stand in for it, which --help could not say.
  cmd->add_option("--dir", o->dir, "Trace directory; $NCCLSCOPE_DIR when not given");
  cmd->add_option("--listen", o->listen,
                  "ADDR:PORT to serve on; port 0 picks a free one (default: all addresses, "
                  "port 9478, so the node's Prometheus can scrape it)")
      ->capture_default_str();
  cmd->add_option("--verdict-interval", o->verdict_interval_s,
                  "Seconds between correlator runs whose verdicts /metrics shows")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--stall-after", o->stall_s, "Seconds a wait must last to count as a hang")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--confirm-floor", o->confirm_floor_s,
                  "Seconds a suspect whose culprit is not shown stuck must last before it is a "
                  "confirmed hang, at least (docs/metrics.md)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--confirm-factor", o->confirm_factor,
                  "A suspect is confirmed after this many times the longest pause the job has "
                  "shown (between the floor and the ceiling)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--confirm-ceiling", o->confirm_ceiling_s,
                  "Seconds after which a suspect is a confirmed hang whatever the job has shown")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--this-host-only", o->this_host_only,
                "Serve only the ring files written on this host, when nodes share one trace "
                "directory (the verdicts still correlate every file)");
  cmd->add_option("--job", o->job,
                  "Serve and correlate the ring files of this job only (the ring header's job id); "
                  "default: the job of the newest heartbeat, the others' files ignored with a line "
                  "on stderr");
  cmd->add_option("--peers", o->peers,
                  "Another exporter of this job: http://host:port, host[:port] (port: this "
                  "exporter's own), or a hostfile of host[:port] lines; repeatable. With peers, "
                  "one exporter of the job correlates every node's digest (exporters/README.md)")
      ->allow_extra_args(false);
  cmd->add_option("--peers-from", o->peers_from,
                  "Find the peers: slurm (SLURM_JOB_NODELIST), dns:NAME[:PORT] (every address of a "
                  "Kubernetes headless service), prometheus:URL[:JOB] (the active targets of that "
                  "scrape job, default ncclscope); repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--correlate-every", o->correlate_every_s,
                  "Seconds between the job correlator's cycles (fetch every peer's digest and "
                  "correlate, or check the nodes before this one)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--peer-timeout", o->peer_timeout_s,
                  "Seconds to connect to and fetch from one peer; a slower peer is unreachable")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--job-verdict-file", o->job_verdict_file,
                  "Where the correlating exporter writes the job view (analyze --json's document, "
                  "atomically, mode 0600) whenever its verdicts change; '' for nowhere (default: "
                  "verdict-job.json in --dir)");
  cmd->callback([=] {
    if (o->dir.empty()) {
      std::cerr << "ncclscope exporter: no trace directory: give --dir D or set NCCLSCOPE_DIR\n";
      *exit_code = 3;
      return;
    }
    if (o->confirm_ceiling_s < o->confirm_floor_s) {
      std::cerr << "ncclscope exporter: --confirm-ceiling " << o->confirm_ceiling_s
                << " is below --confirm-floor " << o->confirm_floor_s << "\n";
      *exit_code = 3;
      return;
    }
    o->version = NCCLSCOPE_VERSION;
    *exit_code = exporters::RunExporter(*o);
  });
}

}  // namespace ncclscope::tools
