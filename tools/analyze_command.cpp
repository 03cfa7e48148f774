// `ncclscope analyze DIR [--json]`: reads every ring file of a job (live or after it died) and
// prints the correlator's verdicts. Exit code: 0 healthy, 1 straggler, 2 hang/deadlock/desync/dead,
// 3 unusable input.
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "hang_detector/correlator.h"
#include "hang_detector/verdict_text.h"
#include "tools/commands.h"
#include "tools/record_printer.h"
#include "trace/clock.h"
#include "trace/trace_set.h"

namespace ncclscope::tools {
namespace {

namespace hd = hang_detector;

struct AnalyzeCliOptions {
  std::string dir;
  bool json = false;
  bool verbose = false;
  bool job_ended = false;
  bool no_process_checks = false;
  double stall_s = 2.0;
  double stale_s = 2.0;
};

nlohmann::json RanksJson(const std::vector<int>& ranks) {
  return nlohmann::json(ranks);
}

nlohmann::json VerdictJson(const hd::Verdict& v) {
  nlohmann::json j = {{"class", hd::VerdictClassName(v.cls)},
                      {"comm_id", v.comm_id != 0 ? HexId(v.comm_id) : ""},
                      {"comm_name", v.comm_name},
                      {"op", v.op},
                      {"seq", v.seq},
                      {"culprits", RanksJson(v.culprits)},
                      {"victims", RanksJson(v.victims)},
                      {"tie", v.tie},
                      {"since_s", v.since_s},
                      {"summary", v.summary},
                      {"headline", hd::VerdictHeadline(v)}};
  nlohmann::json evidence = nlohmann::json::array();
  for (const hd::Evidence& e : v.evidence) {
    nlohmann::json je = {{"rank", e.rank}, {"text", e.text}};
    if (e.has_record) je["record_index"] = e.record_index;
    evidence.push_back(std::move(je));
  }
  j["evidence"] = std::move(evidence);
  return j;
}

nlohmann::json AnalysisJson(const hd::Analysis& a) {
  nlohmann::json verdicts = nlohmann::json::array();
  for (const hd::Verdict& v : a.verdicts) verdicts.push_back(VerdictJson(v));
  nlohmann::json waiting = nlohmann::json::array();
  for (const hd::WaitingOn& w : a.waiting) {
    waiting.push_back({{"comm_id", HexId(w.comm_id)},
                       {"comm_name", w.comm_name},
                       {"op", w.op},
                       {"seq", w.seq},
                       {"issued", RanksJson(w.issued)},
                       {"completed", RanksJson(w.completed)},
                       {"not_issued", RanksJson(w.not_issued)},
                       {"since_s", w.since_s}});
  }
  const hd::InputReport& in = a.input;
  return {{"usable", a.usable},
          {"exit_code", hd::ExitCode(a)},
          {"verdicts", std::move(verdicts)},
          {"waiting", std::move(waiting)},
          {"input",
           {{"files", in.files},
            {"world_size", in.world_size},
            {"unreadable", in.unreadable},
            {"missing_ranks", in.missing_ranks},
            {"wrapped_ranks", in.wrapped_ranks},
            {"torn_ranks", in.torn_ranks},
            {"dropped_ranks", in.dropped_ranks},
            {"post_mortem", in.post_mortem},
            {"notes", in.notes}}}};
}

int Analyze(const AnalyzeCliOptions& o) {
  trace::TraceSet set;
  std::string error;
  if (!trace::ReadTraceDir(o.dir, &set, &error)) {
    std::cerr << "ncclscope analyze: " << error << "\n";
    return 3;
  }
  const auto probe = hd::MakeLinuxProcessProbe();
  hd::AnalyzeOptions options;
  options.now_wall_ns = trace::RealtimeNs();
  options.probe = o.no_process_checks ? nullptr : probe.get();
  options.stall_s = o.stall_s;
  options.stale_s = o.stale_s;
  options.job_ended = o.job_ended;
  const hd::Analysis a = hd::Analyze(set, options);
  if (o.json) {
    std::cout << AnalysisJson(a).dump(2) << "\n";
  } else {
    if (!a.usable) std::cerr << "ncclscope analyze: " << o.dir << ": no readable ring files\n";
    std::cout << hd::RenderText(a, o.verbose);
  }
  std::cout.flush();
  return hd::ExitCode(a);
}

}  // namespace

void RegisterAnalyzeCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "analyze", "Correlate the ranks of a job: hangs, desyncs, dead or frozen ranks, deadlocks");
  auto o = std::make_shared<AnalyzeCliOptions>();
  cmd->add_option("dir", o->dir, "Trace directory")->required();
  cmd->add_flag("--json", o->json, "One JSON object: verdicts, waiting-on view, input report");
  cmd->add_flag("-v,--verbose", o->verbose, "Also print what every communicator waits on");
  cmd->add_flag("--job-ended", o->job_ended,
                "The launcher ended the job (timeout, scancel): judge ranks against each other, "
                "as of the job's last heartbeat");
  cmd->add_flag("--no-process-checks", o->no_process_checks,
                "Do not check writer pids on this host (the trace was copied from elsewhere)");
  cmd->add_option("--stall-after", o->stall_s, "Seconds a wait must last to count as a hang")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--stale-after", o->stale_s,
                  "Seconds without heartbeat that mean no progress (several heartbeat periods)")
      ->check(CLI::PositiveNumber);
  cmd->callback([=] { *exit_code = Analyze(*o); });
}

}  // namespace ncclscope::tools
