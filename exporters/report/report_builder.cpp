#include "exporters/report/report_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <ctime>
#include <map>
#include <set>

#include "exporters/measures/size_classes.h"
#include "exporters/report/html.h"
#include "exporters/report/svg_timeline.h"
#include "exporters/timeline/output_file.h"
#include "exporters/timeline/timeline_builder.h"
#include "hang_detector/verdicts/verdict_text.h"
#include "trace/nccl_names.h"

namespace ncclscope::exporters::report {

namespace {

namespace hd = hang_detector;

constexpr size_t kTimelineRanks = 16;  // rows of the timeline
constexpr size_t kRankRows = 50;       // ranks listed one by one in the per-rank table
constexpr size_t kTableRows = 40;      // rows of the cost and progress tables before "N more"
constexpr size_t kListedRanks = 32;    // ranks named in one cell before "and N more"
constexpr double kMarginS = 2;         // seconds kept around the incident

constexpr const char* kStyle = R"css(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d2330; max-width: 1280px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; }
.sub { color: #5b6475; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { border: 1px solid #d6dae3; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f1f3f7; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.verdict { border-left: 5px solid #e53935; padding: 6px 12px; margin: 10px 0; background: #fff6f5; }
.verdict.healthy { border-color: #43a047; background: #f4fbf4; }
.verdict.straggler, .verdict.numerics, .verdict.suspect { border-color: #fb8c00; background: #fff9f0; }
.headline { font-weight: 600; }
ul.evidence { margin: 4px 0 0 0; font-family: ui-monospace, monospace; font-size: 12px; }
svg.timeline text.rank { font: 11px ui-monospace, monospace; fill: #1d2330; }
svg.timeline text.axis { font: 10px sans-serif; fill: #5b6475; }
svg.timeline line.tick { stroke: #e3e6ec; }
svg.timeline rect.open { stroke: #8e0000; stroke-width: 1; }
svg.timeline path.verdict { fill: #b71c1c; }
)css";

std::string Seconds(double s) {
  if (s <= 0) return "0";
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

std::string RankList(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size() && i < kListedRanks; ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  }
  if (ranks.size() > kListedRanks) out += fmt::format(" and {} more", ranks.size() - kListedRanks);
  return out.empty() ? "-" : out;
}

std::string NcclVersion(uint32_t code) {
  if (code == 0) return "unknown";
  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9.
  return fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
}

std::string WallTime(int64_t ns) {
  const time_t s = static_cast<time_t>(ns / 1000000000);
  tm t{};
  gmtime_r(&s, &t);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &t);
  return buf;
}

const hd::Verdict* Incident(const hd::Analysis& a) {
  for (const hd::Verdict& v : a.verdicts) {
    if (v.cls != hd::VerdictClass::kHealthy) return &v;
  }
  return nullptr;
}

std::string VerdictsSection(const hd::Analysis& a) {
  std::string out = "<h2 id=\"verdicts\">Verdicts</h2>\n";
  for (const hd::Verdict& v : a.verdicts) {
    const bool healthy = v.cls == hd::VerdictClass::kHealthy;
    // Stragglers and numerics verdicts are findings, never hangs: no stage two to show.
    const char* kind = healthy              ? "healthy"
                       : !hd::IsHang(v.cls) ? hd::FindingStage(v.cls)
                       : !v.confirmed       ? "suspect"
                                            : "hang";
    out += fmt::format("<div class=\"verdict {}\"><div class=\"headline\">{}</div>\n", kind,
                       Html(hd::VerdictHeadline(v)));
    if (!healthy) {
      std::vector<std::vector<std::string>> rows = {
          {"culprits", RankList(v.culprits) + (v.tie ? " (a tie: no single culprit)" : "")},
          {"victims", RankList(v.victims)}};
      if (v.unseen_count > 0) rows.push_back({"unseen", std::to_string(v.unseen_count)});
      if (!v.confirmed_by.empty()) rows.push_back({"stage", v.confirmed_by});
      if (!v.activity.empty()) rows.push_back({"culprits are", v.activity});
      if (!v.stall.stage.empty()) {
        rows.push_back(
            {"stall", fmt::format("{} (rank {}, peer {}, channel {} {})", v.stall.stage,
                                  v.stall.rank, v.stall.peer, v.stall.channel, v.stall.side)});
      }
      for (const hd::Verdict::Place& p : v.where) {
        std::string where = p.phase.empty() ? "" : p.phase;
        if (p.has_step) where += fmt::format(" step {}", p.step);
        if (!p.range.empty()) where += " in " + p.range;
        rows.push_back({p.role + " " + RankList(p.ranks), where + " (" + p.basis + ")"});
      }
      out += Table({}, rows);
      if (!v.evidence.empty()) {
        out += "<ul class=\"evidence\">\n";
        for (const hd::Evidence& e : v.evidence) out += "<li>" + Html(e.text) + "</li>\n";
        out += "</ul>\n";
      }
    }
    out += "</div>\n";
  }
  return out;
}

// The ranks the timeline draws: the incident's culprits, their neighbours and a few victims; the
// first ranks of the job when it is healthy.
std::vector<std::pair<int, int>> TimelineRanks(const hd::Verdict* incident, int world) {
  std::set<int> ranks;
  if (incident != nullptr) {
    for (int r : incident->culprits) {
      for (int d = -1; d <= 1; ++d) {
        if (r + d >= 0 && (world <= 0 || r + d < world)) ranks.insert(r + d);
      }
    }
    for (int r : incident->victims) {
      if (ranks.size() >= kTimelineRanks) break;
      ranks.insert(r);
    }
  }
  for (int r = 0; ranks.size() < std::min<size_t>(8, world > 0 ? world : 8); ++r) ranks.insert(r);
  std::vector<std::pair<int, int>> out;
  for (int r : ranks) {
    if (out.size() == kTimelineRanks) break;
    out.emplace_back(r, r);
  }
  return out;
}

std::string TimelineSection(RingSource& source, const hd::Analysis& a, int world) {
  const hd::Verdict* incident = Incident(a);
  timeline::TimelineOptions options;
  options.ranks = TimelineRanks(incident, world);
  options.analysis = &a;
  std::string scope = "the first 10 s of the job";
  if (incident != nullptr && incident->comm_id != 0 && incident->seq != 0) {
    options.around_comm = fmt::format("{:016x}", incident->comm_id);
    options.around_seq = incident->seq;
    options.around_margin_s = kMarginS;
    scope = fmt::format("{} {} #{}, {:.0f} s either side", incident->comm_name, incident->op,
                        incident->seq, kMarginS);
  } else {
    options.from_s = 0;
    options.to_s = 10;
  }
  SvgTimeline svg;
  timeline::TimelineSummary summary;
  std::string error;
  std::string out = "<h2 id=\"timeline\">Timeline</h2>\n";
  if (!timeline::WriteTimeline(source, options, &svg, &summary, &error)) {
    return out + "<p>No timeline: " + Html(error) + "</p>\n";
  }
  out += fmt::format(
      "<p class=\"sub\">Device work of {} ranks around {}: a bar per operation from its kernel "
      "start (or the call) to its completion, coloured by communicator; red: never completed; "
      "marks: verdicts. Hover for names. Clocks: {}. "
      "The whole job: <code>ncclscope timeline DIR -o job.pftrace</code>.</p>\n",
      svg.ranks(), Html(scope),
      summary.clock_hosts <= 1
          ? std::string("one host")
          : fmt::format("{} hosts, {} of them bounded, within {}", summary.clock_hosts,
                        summary.clock_bounded_hosts + 1, Seconds(summary.clock_bound_ns * 1e-9)));
  out += "<div style=\"overflow-x:auto\">" + svg.Render(INT64_MIN, INT64_MAX) + "</div>\n";
  return out;
}

std::string StatsSection(const CostTable& t, const hd::Verdict* incident) {
  std::string out = "<h2 id=\"stats\">What each collective cost</h2>\n";
  // The rows that cost the job most time first; a large job's thousands of communicators (one tp
  // per node...) are summed up after kTableRows.
  std::vector<const CostRow*> order;
  for (const CostRow& r : t.rows) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const CostRow* a, const CostRow* b) {
    return a->mean_s * static_cast<double>(a->calls) > b->mean_s * static_cast<double>(b->calls);
  });
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < order.size() && i < kTableRows; ++i) {
    const CostRow& r = *order[i];
    rows.push_back({r.comm_label, trace::OpTypeName(r.op), kSizeClasses[r.size_class],
                    std::to_string(r.calls), r.timing, Seconds(r.p50_s), Seconds(r.p90_s),
                    Seconds(r.p99_s), fmt::format("{:.2f}", r.algbw_gbs),
                    fmt::format("{:.2f}", r.busbw_gbs),
                    r.slowest_rank < 0
                        ? "-"
                        : fmt::format("{} (+{})", r.slowest_rank, Seconds(r.slowest_lateness_s))});
  }
  out += Table({"communicator", "operation", "size", "calls", "timing", "p50", "p90", "p99",
                "algBw GB/s", "busBw GB/s", "slowest rank (lateness)"},
               rows, {false, false, false, true, false, true, true, true, true, true, false});
  if (order.size() > kTableRows) {
    out += fmt::format(
        "<p class=\"sub\">The {} rows that took the most time (calls x mean) of {}; all of them: "
        "<code>ncclscope stats DIR</code>.</p>\n",
        kTableRows, order.size());
  }
  // Per rank: the ones that matter one by one, the others summed up.
  std::set<int> wanted;
  if (incident != nullptr) {
    wanted.insert(incident->culprits.begin(), incident->culprits.end());
    for (size_t i = 0; i < incident->victims.size() && i < 8; ++i) {
      wanted.insert(incident->victims[i]);
    }
  }
  std::vector<const RankRow*> by_lateness;
  for (const RankRow& r : t.ranks) by_lateness.push_back(&r);
  std::sort(by_lateness.begin(), by_lateness.end(), [](const RankRow* a, const RankRow* b) {
    return a->mean_lateness_s > b->mean_lateness_s;
  });
  for (const RankRow* r : by_lateness) {
    if (wanted.size() >= kRankRows) break;
    if (r->pending > 0 || r->lateness_samples > 0) wanted.insert(r->rank);
  }
  std::vector<std::vector<std::string>> ranks;
  std::vector<uint64_t> others;
  for (const RankRow& r : t.ranks) {
    if (wanted.count(r.rank) == 0 && t.ranks.size() > kRankRows) {
      others.push_back(r.calls);
      continue;
    }
    ranks.push_back({r.rank >= 0 ? std::to_string(r.rank) : "?", r.host, std::to_string(r.pid),
                     std::to_string(r.calls), Seconds(r.seconds), std::to_string(r.pending),
                     r.lateness_samples > 0 ? Seconds(r.mean_lateness_s) : "-"});
  }
  out += "<h3>Ranks</h3>\n";
  out += Table({"rank", "host", "pid", "calls", "time", "pending", "mean lateness"}, ranks,
               {true, false, true, true, true, true, true});
  if (!others.empty()) {
    std::sort(others.begin(), others.end());
    out += fmt::format(
        "<p class=\"sub\">{} other ranks (none in a verdict, none late): calls min {}, median "
        "{}, max {}.</p>\n",
        others.size(), others.front(), others[others.size() / 2], others.back());
  }
  return out;
}

// The communicator as the cost table names it (`dp (ranks 1,3)`): the four dp of a job split in
// four wait on the same operation number, and only their members tell them apart.
std::string WaitingCommLabel(const hd::WaitingOn& w, const CostTable& t) {
  const CommInstance* c = FindCommInstance(t.comms, w.comm_id);
  // Not found only when a live job created it between the analysis' read and the table's.
  return c != nullptr ? c->label : w.comm_name;
}

std::string ProgressSection(const hd::Analysis& a, const CostTable& t) {
  std::string out = "<h2 id=\"progress\">Where each communicator stands</h2>\n";
  if (a.waiting.empty()) return out + "<p>No communicator waits on an operation.</p>\n";
  std::vector<std::vector<std::string>> rows;
  for (const hd::WaitingOn& w : a.waiting) {
    if (rows.size() == kTableRows) break;
    rows.push_back({WaitingCommLabel(w, t), fmt::format("{} #{}", w.op, w.seq),
                    RankList(w.completed), RankList(w.issued), RankList(w.not_issued),
                    std::to_string(w.unseen), Seconds(w.since_s)});
  }
  out += Table({"communicator", "operation", "completed on", "issued, waiting", "not issued by",
                "unseen", "since"},
               rows, {false, false, false, false, false, true, true});
  if (a.waiting.size() > kTableRows) {
    out += fmt::format("<p class=\"sub\">{} more: <code>ncclscope analyze DIR -v</code>.</p>\n",
                       a.waiting.size() - kTableRows);
  }
  return out;
}

struct JobFacts {
  std::set<std::string> hosts;
  std::set<std::string> jobs;
  std::set<uint32_t> nccl_versions;
  int world = -1;
  size_t files = 0;
};

JobFacts Facts(RingSource& source) {
  JobFacts f;
  std::string ignored;
  for (const std::string& name : source.List(&ignored)) {
    trace::RingInfo info;
    trace::RingHeaderCollector header(&info);
    if (!source.Visit(name, UINT64_MAX, &header, &ignored)) continue;
    ++f.files;
    f.hosts.insert(info.host);
    f.jobs.insert(info.job_id);
    if (info.nccl_version != 0) f.nccl_versions.insert(info.nccl_version);
    f.world = std::max(f.world, info.world_size);
  }
  return f;
}

std::string MetadataSection(const JobFacts& f, const ReportInputs& in) {
  std::string versions;
  for (uint32_t v : f.nccl_versions) versions += (versions.empty() ? "" : ", ") + NcclVersion(v);
  std::string jobs;
  for (const std::string& j : f.jobs) jobs += (jobs.empty() ? "" : ", ") + (j.empty() ? "-" : j);
  std::string hosts;
  size_t n = 0;
  for (const std::string& h : f.hosts) {
    if (n++ == kListedRanks) {
      hosts += fmt::format(" and {} more", f.hosts.size() - kListedRanks);
      break;
    }
    hosts += (hosts.empty() ? "" : ", ") + h;
  }
  const hd::InputReport& input = in.analysis->input;
  std::vector<std::vector<std::string>> rows = {
      {"job", jobs},
      {"trace directory", in.dir},
      {"ring files", std::to_string(f.files)},
      {"world size", f.world > 0 ? std::to_string(f.world) : "unknown"},
      {"hosts", fmt::format("{}: {}", f.hosts.size(), hosts)},
      {"NCCL", versions.empty() ? "unknown" : versions},
      {"ranks without a file", RankList(input.missing_ranks)},
      {"ranks whose file could not be read", RankList(input.unreadable_ranks)},
      {"ranks whose ring wrapped", RankList(input.wrapped_ranks)},
      {"unreadable files", std::to_string(input.unreadable.size())},
      {"report", fmt::format("ncclscope {}, {}", in.version, WallTime(in.generated_ns))},
  };
  for (const std::string& note : input.notes) rows.push_back({"note", note});
  return "<h2 id=\"job\">The job</h2>\n" + Table({}, rows);
}

}  // namespace

bool WriteReport(RingSource& source, const ReportInputs& in, const std::string& path,
                 std::string* error) {
  const JobFacts facts = Facts(source);
  if (facts.files == 0) {
    *error = "no readable ring file";
    return false;
  }
  const hd::Analysis& a = *in.analysis;
  const hd::Verdict* incident = Incident(a);
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<title>ncclscope report: " + Html(hd::StageName(a)) + "</title>\n<style>" + kStyle +
          "</style></head><body>\n";
  page += fmt::format(
      "<h1>ncclscope report: {}</h1>\n<p class=\"sub\">{} ranks on {} hosts, {}. "
      "Sections: <a href=\"#verdicts\">verdicts</a>, <a href=\"#timeline\">timeline</a>, "
      "<a href=\"#stats\">costs</a>, <a href=\"#progress\">communicators</a>, "
      "<a href=\"#job\">the job</a>.</p>\n",
      Html(hd::StageName(a)), facts.files, facts.hosts.size(), Html(WallTime(in.generated_ns)));
  page += VerdictsSection(a);
  page += TimelineSection(source, a, facts.world);
  page += StatsSection(*in.costs, incident);
  page += ProgressSection(a, *in.costs);
  page += MetadataSection(facts, in);
  page += "</body></html>\n";

  timeline::OutputFile out;
  if (!out.Open(path, error)) return false;
  out.Write(page);
  return out.Commit(error);
}

}  // namespace ncclscope::exporters::report
