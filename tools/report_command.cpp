// `ncclscope report DIR -o report.html [--job ID]`: one self-contained HTML page about the job
// (exporters/report/report_builder.h): verdicts and evidence, a timeline around the incident, the
// cost tables, what each communicator waits on, the job's metadata.
// Exit code: 0 written; 3 nothing to read or the page could not be written.

#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "exporters/report/report_builder.h"
#include "exporters/sources/job_input.h"
#include "exporters/sources/ring_source.h"
#include "exporters/stats/cost_table.h"
#include "hang_detector/decision/correlator.h"
#include "hang_detector/ingest/job_index.h"
#include "hang_detector/ingest/process_probe.h"
#include "tools/commands.h"
#include "tools/trace_dirs.h"
#include "trace/clock.h"

namespace ncclscope::tools {
namespace {

namespace hd = hang_detector;

struct ReportCliOptions {
  std::vector<std::string> dirs;
  std::string output;
  std::string job;
};

int Run(const ReportCliOptions& o) {
  if (std::string unusable; !ReadableDirsOnce(o.dirs, &unusable)) {
    std::cerr << "ncclscope report: " << unusable << "\n";
    return kUnusableInput;
  }
  const std::string dirs = NameDirs(o.dirs);
  std::string error;
  std::optional<exporters::JobInput> input = exporters::OpenJobInput(o.dirs, o.job, &error);
  if (!input) {
    std::cerr << "ncclscope report: " << error << "\n";
    return kUnusableInput;
  }
  for (const std::string& note : input->notes) std::cerr << "ncclscope report: " << note << "\n";
  const std::optional<hd::JobIndex> index =
      exporters::IndexJobInput(*input, o.dirs, o.job, 2, &error);
  if (!index) {
    std::cerr << "ncclscope report: " << error << "\n";
    return kUnusableInput;
  }
  const auto probe = hd::MakeLinuxProcessProbe();
  hd::AnalyzeOptions analyze;
  analyze.now_wall_ns = trace::RealtimeNs();
  analyze.probe = probe.get();
  exporters::AdjustForInput(*input, &analyze);
  hd::Analysis analysis = hd::Analyze(*index, analyze);
  exporters::NameRecordsAsInput(*input, &analysis);

  exporters::RingSource& source = *input->source;
  exporters::CostTable costs;
  if (!exporters::BuildCostTable(source, &costs, &error)) {
    std::cerr << "ncclscope report: " << dirs << ": " << error << "\n";
    return kUnusableInput;
  }
  exporters::report::ReportInputs inputs;
  inputs.dir = dirs;
  inputs.version = NCCLSCOPE_VERSION;
  inputs.analysis = &analysis;
  inputs.costs = &costs;
  inputs.generated_ns = trace::RealtimeNs();
  if (!exporters::report::WriteReport(source, inputs, o.output, &error)) {
    std::cerr << "ncclscope report: " << dirs << ": " << error << "\n";
    return kUnusableInput;
  }
  std::cout << o.output << ": " << hd::StageName(analysis) << ", " << analysis.verdicts.size()
            << " verdict(s), " << costs.rows.size() << " cost rows, " << costs.ranks.size()
            << " ranks\n";
  return 0;
}

}  // namespace

void RegisterReportCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ReportCliOptions>();
  auto* cmd = app.add_subcommand(
      "report",
      "Write one self-contained HTML page about the job: verdicts and evidence, a timeline "
      "around the incident, what each collective cost, what each communicator waits on");
  cmd->add_option("dir", o->dirs,
                  "Trace directory of the job; or several, each node's, read as one job")
      ->required();
  cmd->add_option("-o,--output", o->output, "HTML file to write (created 0600)")->required();
  cmd->add_option("--job", o->job,
                  "The job to read when the directory holds several (default: the newest "
                  "heartbeat's)");
  cmd->callback([o, exit_code] { *exit_code = Run(*o); });
}

}  // namespace ncclscope::tools
