// `ncclscope stats DIR [--json | --csv] [--job ID]`: what each collective cost, per communicator
// (named by its members: `tp (ranks 2,3)`) x operation x message-size class (calls, time
// p50/p90/p99, nccl-tests' algBw and busBw, the slowest rank and its lateness), then one line per
// rank (exporters/stats/cost_table.h).
// Exit code: 0, or 3 when there is nothing to read (no directory, no readable ring file).

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "exporters/measures/size_classes.h"
#include "exporters/sources/job_input.h"
#include "exporters/stats/cost_table.h"
#include "hang_detector/verdicts/json_writer.h"
#include "tools/commands.h"
#include "tools/trace_dirs.h"
#include "trace/nccl_names.h"

namespace ncclscope::tools {
namespace {

using exporters::CostRow;
using exporters::CostTable;
using exporters::RankRow;

struct StatsOptions {
  std::vector<std::string> dirs;
  bool json = false;
  bool csv = false;
  std::string job;
};

// 12.3 us, 4.56 ms, 1.23 s.
std::string Seconds(double s) {
  if (s <= 0) return "0";
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

std::string Slowest(const CostRow& r) {
  if (r.slowest_rank < 0) return "-";
  return fmt::format("{} (+{})", r.slowest_rank, Seconds(r.slowest_lateness_s));
}

void PrintText(const CostTable& t, bool flight_recorder) {
  // Communicators of one name (a split's colours) are told apart by their members, as the report
  // names them; the id's first digits are analyze's `comm tp (3f2a9c1b…)`.
  size_t width = 16;
  for (const CostRow& r : t.rows) width = std::max(width, r.comm_label.size());
  std::cout << fmt::format(
      "{:<{}} {:<8} {:<14} {:<9} {:>7} {:<6} {:>10} {:>10} {:>10} {:>9} {:>9}  {}\n",
      "communicator", width, "id", "operation", "size", "calls", "timing", "p50", "p90", "p99",
      "algBw", "busBw", "slowest rank (lateness)");
  for (const CostRow& r : t.rows) {
    std::cout << fmt::format(
        "{:<{}} {:<8} {:<14} {:<9} {:>7} {:<6} {:>10} {:>10} {:>10} {:>9.2f} {:>9.2f}  {}\n",
        r.comm_label, width, fmt::format("{:016x}", r.comm_id).substr(0, 8),
        trace::OpTypeName(r.op), exporters::kSizeClasses[r.size_class], r.calls, r.timing,
        Seconds(r.p50_s), Seconds(r.p90_s), Seconds(r.p99_s), r.algbw_gbs, r.busbw_gbs, Slowest(r));
  }
  if (flight_recorder) {
    // time_discovered_completed_ns is when torch's watchdog next looked, after the work ended.
    std::cout << "(timing event: the device time torch's CUDA events measured, duration_ms, "
                 "TORCH_NCCL_ENABLE_TIMING=1; host: time_created_ns to "
                 "time_discovered_completed_ns, when torch's watchdog noticed the completion, "
                 "which can be long after the work ended; bandwidths in GB/s, nccl-tests' "
                 "formulas)\n\n";
  } else {
    std::cout << "(timing device: the kernels' GPU time as CUPTI measured it, NCCLSCOPE_CUPTI=1; "
                 "host: call entry to device completion; bandwidths in GB/s, nccl-tests' "
                 "formulas)\n\n";
  }
  std::cout << fmt::format("{:>5} {:<20} {:>8} {:>8} {:>11} {:>8}  {}\n", "rank", "host", "pid",
                           "calls", "time", "pending", "mean lateness");
  for (const RankRow& r : t.ranks) {
    std::cout << fmt::format("{:>5} {:<20} {:>8} {:>8} {:>11} {:>8}  {}\n",
                             r.rank >= 0 ? std::to_string(r.rank) : "?", r.host, r.pid, r.calls,
                             Seconds(r.seconds), r.pending,
                             r.lateness_samples > 0 ? Seconds(r.mean_lateness_s) : "-");
  }
}

void PrintJson(const CostTable& t) {
  hang_detector::JsonWriter w;
  w.BeginObject();
  w.Key("files").UInt(t.files);
  w.Key("rows").BeginArray();
  for (const CostRow& r : t.rows) {
    w.BeginObject();
    w.Key("comm").String(r.comm_name);
    w.Key("comm_id").String(fmt::format("{:016x}", r.comm_id));
    w.Key("label").String(r.comm_label);
    w.Key("members").IntArray(r.members);
    w.Key("nranks").Int(r.nranks);
    w.Key("op").String(trace::OpTypeName(r.op));
    w.Key("size_class").String(exporters::kSizeClasses[r.size_class]);
    w.Key("calls").UInt(r.calls);
    w.Key("device_calls").UInt(r.device_calls);
    w.Key("event_calls").UInt(r.event_calls);
    w.Key("timing").String(r.timing);
    w.Key("bytes").UInt(r.bytes);
    w.Key("p50_s").Double(r.p50_s);
    w.Key("p90_s").Double(r.p90_s);
    w.Key("p99_s").Double(r.p99_s);
    w.Key("mean_s").Double(r.mean_s);
    w.Key("algbw_gbs").Double(r.algbw_gbs);
    w.Key("busbw_gbs").Double(r.busbw_gbs);
    if (r.slowest_rank >= 0) {
      w.Key("slowest_rank").Int(r.slowest_rank);
      w.Key("slowest_lateness_s").Double(r.slowest_lateness_s);
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("ranks").BeginArray();
  for (const RankRow& r : t.ranks) {
    w.BeginObject();
    w.Key("rank").Int(r.rank);
    w.Key("host").String(r.host);
    w.Key("pid").Int(r.pid);
    w.Key("calls").UInt(r.calls);
    w.Key("seconds").Double(r.seconds);
    w.Key("pending").UInt(r.pending);
    if (r.lateness_samples > 0) w.Key("mean_lateness_s").Double(r.mean_lateness_s);
    w.EndObject();
  }
  w.EndArray();
  w.Key("errors").StringArray(t.errors);
  w.EndObject();
  std::cout << w.str() << "\n";
}

// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

void PrintCsv(const CostTable& t) {
  std::cout << "comm,comm_id,nranks,op,size_class,calls,bytes,p50_s,p90_s,p99_s,mean_s,"
               "algbw_gbs,busbw_gbs,slowest_rank,slowest_lateness_s,timing,device_calls,"
               "event_calls,label\n";
  for (const CostRow& r : t.rows) {
    std::cout << fmt::format(
        "{},{:016x},{},{},{},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.6g},{:.6g},{},{},{},{},{},{}\n",
        CsvField(r.comm_name), r.comm_id, r.nranks, trace::OpTypeName(r.op),
        CsvField(exporters::kSizeClasses[r.size_class]), r.calls, r.bytes, r.p50_s, r.p90_s,
        r.p99_s, r.mean_s, r.algbw_gbs, r.busbw_gbs,
        r.slowest_rank >= 0 ? std::to_string(r.slowest_rank) : "",
        r.slowest_rank >= 0 ? fmt::format("{:.9g}", r.slowest_lateness_s) : "", r.timing,
        r.device_calls, r.event_calls, CsvField(r.comm_label));
  }
}

int Run(const StatsOptions& o) {
  if (std::string unusable; !ReadableDirsOnce(o.dirs, &unusable)) {
    std::cerr << "ncclscope stats: " << unusable << "\n";
    return kUnusableInput;
  }
  const std::string dirs = NameDirs(o.dirs);
  std::string error;
  std::optional<exporters::JobInput> input = exporters::OpenJobInput(o.dirs, o.job, &error);
  if (!input) {
    std::cerr << "ncclscope stats: " << error << "\n";
    return kUnusableInput;
  }
  for (const std::string& note : input->notes) std::cerr << "ncclscope stats: " << note << "\n";
  CostTable t;
  if (!exporters::BuildCostTable(*input->source, &t, &error)) {
    std::cerr << "ncclscope stats: " << dirs << ": " << error << "\n";
    return kUnusableInput;
  }
  for (const std::string& e : t.errors) std::cerr << "ncclscope stats: " << e << "\n";
  for (const std::string& n : input->source->Notes()) std::cerr << "ncclscope stats: " << n << "\n";
  if (t.files == 0) {
    std::cerr << "ncclscope stats: " << dirs
              << (input->fr != nullptr ? ": no readable Flight Recorder dump in it\n"
                                       : ": no readable ring file (*.ring) in it, nor a "
                                         "Flight Recorder dump\n");
    return kUnusableInput;
  }
  if (o.json) {
    PrintJson(t);
  } else if (o.csv) {
    PrintCsv(t);
  } else {
    PrintText(t, input->fr != nullptr);
  }
  return 0;
}

}  // namespace

void RegisterStatsCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<StatsOptions>();
  auto* cmd = app.add_subcommand(
      "stats",
      "What each collective cost: per communicator x operation x size class, calls, time "
      "p50/p90/p99, algBw and busBw (nccl-tests), the slowest rank; then one line per rank");
  cmd->add_option("dir", o->dirs,
                  "Trace directory of the job; or several, each node's, read as one job")
      ->required();
  auto* json = cmd->add_flag("--json", o->json, "Print JSON");
  cmd->add_flag("--csv", o->csv, "Print the communicator table as CSV")->excludes(json);
  cmd->add_option("--job", o->job,
                  "The job to read when the directory holds several (default: the newest "
                  "heartbeat's)");
  cmd->callback([o, exit_code] { *exit_code = Run(*o); });
}

}  // namespace ncclscope::tools
