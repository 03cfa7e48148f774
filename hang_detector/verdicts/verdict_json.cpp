#include "hang_detector/verdicts/verdict_json.h"

#include <algorithm>
#include <cstdio>

#include "hang_detector/verdicts/json_writer.h"
#include "hang_detector/verdicts/verdict_text.h"

namespace ncclscope::hang_detector {
namespace {

// Sorted ranks as [[first, last], ...]: [[0, 3], [8, 8]] for 0,1,2,3,8.
void WriteRanges(JsonWriter& w, const std::vector<int>& ranks) {
  w.BeginArray();
  for (size_t i = 0; i < ranks.size();) {
    size_t end = i + 1;
    while (end < ranks.size() && ranks[end] == ranks[end - 1] + 1) ++end;
    w.IntArray({ranks[i], ranks[end - 1]});
    i = end;
  }
  w.EndArray();
}

void WriteVerdict(JsonWriter& w, const Verdict& v) {
  w.BeginObject();
  w.Key("class").String(VerdictClassName(v.cls));
  w.Key("comm_id").String(v.comm_id != 0 ? HexCommId(v.comm_id) : "");
  w.Key("comm_name").String(v.comm_name);
  w.Key("op").String(v.op);
  w.Key("seq").UInt(v.seq);
  if (v.fr_p2p_seq_id > 0) {
    w.Key("fr_p2p_seq_id").Int(v.fr_p2p_seq_id);
    w.Key("fr_p2p_rank").Int(v.fr_p2p_rank);
  }
  w.Key("culprits").IntArray(v.culprits);
  w.Key("victims").IntArray(v.victims);
  // Members without data here: ranges, as they may be a whole other half of the job.
  w.Key("unseen_count").Int(v.unseen_count);
  w.Key("unseen_ranges");
  WriteRanges(w, v.unseen);
  w.Key("tie").Bool(v.tie);
  w.Key("since_s").Double(v.since_s);
  if (IsHang(v.cls)) {
    w.Key("confirmed").Bool(v.confirmed);
    if (!v.confirmed) w.Key("confirm_after_s").Double(v.confirm_after_s);
    w.Key("confirmed_by").String(v.confirmed_by);
  }
  if (!v.activity.empty()) w.Key("activity").String(v.activity);
  if (!v.stall.stage.empty()) {
    w.Key("stall").BeginObject();
    w.Key("stage").String(v.stall.stage);
    w.Key("rank").Int(v.stall.rank);
    w.Key("peer").Int(v.stall.peer);
    w.Key("channel").Int(v.stall.channel);
    w.Key("side").String(v.stall.side);
    w.EndObject();
  }
  // Absent without NVTX contexts in the records: a consumer never reads a guessed step.
  if (!v.where.empty()) {
    w.Key("where").BeginArray();
    for (const Verdict::Place& p : v.where) {
      w.BeginObject();
      w.Key("role").String(p.role);
      w.Key("ranks").IntArray(p.ranks);
      if (p.has_step) {
        w.Key("step").UInt(p.step);
        if (p.last_step != p.step) w.Key("last_step").UInt(p.last_step);
      }
      if (!p.phase.empty()) w.Key("phase").String(p.phase);
      if (!p.range.empty()) w.Key("range").String(p.range);
      w.Key("basis").String(p.basis);
      w.EndObject();
    }
    w.EndArray();
  }
  w.Key("summary").String(v.summary);
  w.Key("headline").String(VerdictHeadline(v));
  w.Key("evidence").BeginArray();
  for (const Evidence& e : v.evidence) {
    w.BeginObject();
    w.Key("rank").Int(e.rank);
    w.Key("text").String(e.text);
    if (e.has_record) w.Key("record_index").UInt(e.record_index);
    if (e.fr_record_id >= 0) w.Key("fr_record_id").Int(e.fr_record_id);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

void WriteWaiting(JsonWriter& w, const WaitingOn& o) {
  w.BeginObject();
  w.Key("comm_id").String(HexCommId(o.comm_id));
  w.Key("comm_name").String(o.comm_name);
  w.Key("op").String(o.op);
  w.Key("seq").UInt(o.seq);
  w.Key("issued").IntArray(o.issued);
  w.Key("completed").IntArray(o.completed);
  w.Key("not_issued").IntArray(o.not_issued);
  w.Key("unseen").Int(o.unseen);
  w.Key("since_s").Double(o.since_s);
  w.EndObject();
}

}  // namespace

std::string HexCommId(uint64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

namespace {

// The job's incident as its watchdog recorded it (hang_detector/incident/).
void WriteIncident(JsonWriter& w, const IncidentView& i) {
  w.Key("incident").BeginObject();
  w.Key("key").String(i.key);
  w.Key("stage").String(i.stage);
  w.Key("confirmed_by").String(i.how);
  w.Key("onset_wall_ns").Int(i.onset_wall_ns);
  w.Key("confirmed_wall_ns").Int(i.confirmed_wall_ns);
  w.Key("resolved_wall_ns").Int(i.resolved_wall_ns);
  w.Key("resolution").String(i.resolution);
  w.Key("recorded_by_rank").Int(i.holder_rank);
  w.Key("abort_mode").Bool(i.abort_mode);
  w.EndObject();
}

// resolved_after_s < 0: the analysis as it stands.
std::string Render(const Analysis& a, int indent, double resolved_after_s) {
  JsonWriter w(indent);
  w.BeginObject();
  w.Key("usable").Bool(a.usable);
  w.Key("exit_code").Int(resolved_after_s < 0 ? ExitCode(a) : 0);
  w.Key("stage").String(resolved_after_s < 0 ? StageName(a) : "resolved");
  if (resolved_after_s >= 0) w.Key("resolved_after_s").Double(resolved_after_s);
  w.Key("job").String(a.input.job);
  w.Key("restart").Int(a.input.restart);
  if (!a.incident.key.empty()) WriteIncident(w, a.incident);
  w.Key("verdicts").BeginArray();
  for (const Verdict& v : a.verdicts) WriteVerdict(w, v);
  w.EndArray();
  w.Key("waiting").BeginArray();
  for (const WaitingOn& o : a.waiting) WriteWaiting(w, o);
  w.EndArray();
  const InputReport& in = a.input;
  w.Key("input").BeginObject();
  w.Key("files").Int(in.files);
  w.Key("world_size").Int(in.world_size);
  w.Key("ranks_seen").Int(in.ranks_seen);
  w.Key("digest_ranks").Int(in.digest_ranks);
  w.Key("unreadable").StringArray(in.unreadable);
  // Ranks without a file run up to the world size: as [first, last] ranges they take a line per
  // gap between files present, not a number per rank.
  w.Key("missing_rank_count").Int(static_cast<int64_t>(in.missing_ranks.size()));
  w.Key("missing_rank_ranges");
  WriteRanges(w, in.missing_ranks);
  w.Key("unreadable_ranks").IntArray(in.unreadable_ranks);
  w.Key("wrapped_ranks").IntArray(in.wrapped_ranks);
  w.Key("torn_ranks").IntArray(in.torn_ranks);
  w.Key("dropped_ranks").IntArray(in.dropped_ranks);
  w.Key("post_mortem").Bool(in.post_mortem);
  w.Key("notes").StringArray(in.notes);
  w.EndObject();
  w.EndObject();
  return w.str();
}

}  // namespace

std::string RenderJson(const Analysis& a, int indent) {
  return Render(a, indent, -1);
}

std::string RenderResolvedJson(const Analysis& a, double resolved_after_s, int indent) {
  return Render(a, indent, std::max(0.0, resolved_after_s));
}

}  // namespace ncclscope::hang_detector
