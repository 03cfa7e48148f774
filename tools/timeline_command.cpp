// `ncclscope timeline DIR -o FILE [--format perfetto|chrome-json] [--ranks 0-63] [--comm NAME]
// [--from S] [--to S | --around verdict|SEQ [--margin S]] [--no-verdicts]`: the job's ranks side by
// side, for ui.perfetto.dev (exporters/timeline/timeline_builder.h says what the trace holds). The
// verdicts marked are those `ncclscope analyze DIR` would give now. Exit code: 0 written; 2 bad
// options; 3 nothing to read or the file could not be written.

#include <fmt/format.h>

#include <charconv>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "exporters/sources/job_input.h"
#include "exporters/sources/ring_source.h"
#include "exporters/timeline/chrome_json_writer.h"
#include "exporters/timeline/perfetto_writer.h"
#include "exporters/timeline/timeline_builder.h"
#include "hang_detector/decision/correlator.h"
#include "hang_detector/ingest/job_index.h"
#include "hang_detector/ingest/process_probe.h"
#include "tools/commands.h"
#include "tools/trace_dirs.h"
#include "trace/clock.h"

namespace ncclscope::tools {
namespace {

namespace tl = exporters::timeline;
namespace hd = hang_detector;

constexpr int kBadOptions = 2;

struct TimelineCliOptions {
  std::vector<std::string> dirs;
  std::string output;
  std::string format = "perfetto";
  std::string ranks;
  std::string comm;
  std::optional<double> from_s;
  std::optional<double> to_s;
  std::string around;
  double margin_s = 5;
  std::string job;
  bool no_verdicts = false;
};

// The correlator's verdicts on the same files, as `ncclscope analyze DIR` gives them.
std::optional<hd::Analysis> Verdicts(const TimelineCliOptions& o,
                                     const exporters::JobInput& input) {
  std::string error;
  const std::optional<hd::JobIndex> index =
      exporters::IndexJobInput(input, o.dirs, o.job, 2, &error);
  if (!index) return std::nullopt;
  const auto probe = hd::MakeLinuxProcessProbe();
  hd::AnalyzeOptions options;
  options.now_wall_ns = trace::RealtimeNs();
  options.probe = probe.get();
  exporters::AdjustForInput(input, &options);
  hd::Analysis analysis = hd::Analyze(*index, options);
  exporters::NameRecordsAsInput(input, &analysis);
  return analysis;
}

// --around verdict (the first verdict about an operation) or --around SEQ (of --comm): 0, or the
// exit code.
int Around(const TimelineCliOptions& o, const hd::Analysis* analysis,
           tl::TimelineOptions* options) {
  options->around_margin_s = o.margin_s;
  if (o.from_s || o.to_s) {
    std::cerr << "ncclscope timeline: --around sets the window itself; drop --from and --to\n";
    return kBadOptions;
  }
  if (o.around == "verdict") {
    if (o.no_verdicts) {
      std::cerr << "ncclscope timeline: --around verdict needs the verdicts; drop --no-verdicts\n";
      return kBadOptions;
    }
    for (const hd::Verdict& v :
         analysis != nullptr ? analysis->verdicts : std::vector<hd::Verdict>{}) {
      if (v.cls == hd::VerdictClass::kHealthy || v.comm_id == 0 || v.seq == 0) continue;
      options->around_comm = fmt::format("{:016x}", v.comm_id);
      options->around_seq = v.seq;
      return 0;
    }
    std::cerr << "ncclscope timeline: --around verdict: no verdict names an operation of "
              << NameDirs(o.dirs) << "\n";
    return kUnusableInput;
  }
  uint64_t seq = 0;
  const auto r = std::from_chars(o.around.data(), o.around.data() + o.around.size(), seq);
  if (r.ec != std::errc() || r.ptr != o.around.data() + o.around.size() || seq == 0) {
    std::cerr << "ncclscope timeline: --around '" << o.around
              << "' is neither 'verdict' nor a sequence number\n";
    return kBadOptions;
  }
  if (o.comm.empty()) {
    std::cerr << "ncclscope timeline: --around " << seq << " needs --comm: whose #" << seq << "?\n";
    return kBadOptions;
  }
  options->around_comm = o.comm;
  options->around_seq = seq;
  return 0;
}

int Run(const TimelineCliOptions& o) {
  if (std::string unusable; !ReadableDirsOnce(o.dirs, &unusable)) {
    std::cerr << "ncclscope timeline: " << unusable << "\n";
    return kUnusableInput;
  }
  const std::string dirs = NameDirs(o.dirs);
  tl::TimelineOptions options;
  std::string error;
  if (!o.ranks.empty() && !tl::ParseRankList(o.ranks, &options.ranks, &error)) {
    std::cerr << "ncclscope timeline: --ranks: " << error << "\n";
    return kBadOptions;
  }
  if (o.from_s && o.to_s && *o.from_s > *o.to_s) {
    std::cerr << "ncclscope timeline: --from " << *o.from_s << " is after --to " << *o.to_s << "\n";
    return kBadOptions;
  }
  options.comm = o.comm;
  options.from_s = o.from_s;
  options.to_s = o.to_s;
  std::optional<exporters::JobInput> input = exporters::OpenJobInput(o.dirs, o.job, &error);
  if (!input) {
    std::cerr << "ncclscope timeline: " << error << "\n";
    return kUnusableInput;
  }
  for (const std::string& note : input->notes) std::cerr << "ncclscope timeline: " << note << "\n";
  std::optional<hd::Analysis> analysis;
  if (!o.no_verdicts) analysis = Verdicts(o, *input);
  if (analysis) options.analysis = &*analysis;
  if (!o.around.empty()) {
    const int code = Around(o, analysis ? &*analysis : nullptr, &options);
    if (code != 0) return code;
  }

  std::unique_ptr<tl::TimelineSink> sink;
  if (o.format == "perfetto") {
    auto w = std::make_unique<tl::PerfettoWriter>();
    if (!w->Open(o.output, &error)) {
      std::cerr << "ncclscope timeline: " << error << "\n";
      return kUnusableInput;
    }
    sink = std::move(w);
  } else {
    auto w = std::make_unique<tl::ChromeJsonWriter>();
    if (!w->Open(o.output, &error)) {
      std::cerr << "ncclscope timeline: " << error << "\n";
      return kUnusableInput;
    }
    sink = std::move(w);
  }
  tl::TimelineSummary summary;
  if (!tl::WriteTimeline(*input->source, options, sink.get(), &summary, &error)) {
    std::cerr << "ncclscope timeline: " << dirs << ": " << error << "\n";
    return kUnusableInput;
  }
  for (const std::string& e : summary.errors) std::cerr << "ncclscope timeline: " << e << "\n";
  for (const std::string& n : input->source->Notes()) {
    std::cerr << "ncclscope timeline: " << n << "\n";
  }
  std::cout << fmt::format(
      "{}: {} ranks, {} calls, {} device slices ({} never ended), {} verdict marks; clocks: {}\n",
      o.output, summary.ranks_written, summary.host_slices, summary.device_slices,
      summary.open_slices, summary.verdict_marks,
      summary.clock_hosts <= 1
          ? std::string("one host")
          : fmt::format("{} hosts, {} bounded, within {:.1f} us", summary.clock_hosts,
                        summary.clock_bounded_hosts + 1, summary.clock_bound_ns * 1e-3));
  return 0;
}

}  // namespace

void RegisterTimelineCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<TimelineCliOptions>();
  auto* cmd = app.add_subcommand(
      "timeline",
      "Write the job's timeline for ui.perfetto.dev: a process per rank, its NCCL calls and the "
      "device execution of its operations, arrows joining each collective across ranks, verdicts "
      "on their culprits");
  cmd->add_option("dir", o->dirs,
                  "Trace directory of the job; or several, each node's, read as one job")
      ->required();
  cmd->add_option("-o,--output", o->output, "File to write (created 0600)")->required();
  cmd->add_option("--format", o->format,
                  "perfetto: Perfetto's protobuf trace (default); chrome-json: Chrome trace "
                  "event JSON")
      ->check(CLI::IsMember({"perfetto", "chrome-json"}));
  cmd->add_option("--ranks", o->ranks, "Only these global ranks, e.g. 0-63,128");
  cmd->add_option("--comm", o->comm,
                  "Only this communicator: its name, or 4+ leading hex digits of its id");
  cmd->add_option("--from", o->from_s,
                  "Start of the window, seconds after the first rank's ring file was created")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--to", o->to_s, "End of the window, seconds after the same origin")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--around", o->around,
                  "Only the time around one operation: 'verdict' (the first verdict's) or a "
                  "sequence number of --comm");
  cmd->add_option("--margin", o->margin_s, "Seconds kept on each side of --around's operation")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--job", o->job,
                  "The job to read when the directory holds several (default: the newest "
                  "heartbeat's)");
  cmd->add_flag("--no-verdicts", o->no_verdicts, "Do not run the correlator to mark verdicts");
  cmd->callback([o, exit_code] { *exit_code = Run(*o); });
}

}  // namespace ncclscope::tools
