#include "hang_detector/verdicts/verdict_text.h"

#include <cstdio>

#include "hang_detector/verdicts/rank_list.h"
#include "trace/nvtx_names.h"

namespace ncclscope::hang_detector {
namespace {

const char* Headword(VerdictClass c) {
  switch (c) {
    case VerdictClass::kHealthy:
      return "HEALTHY";
    case VerdictClass::kStraggler:
      return "SLOW";
    case VerdictClass::kDesync:
      return "DESYNC";
    case VerdictClass::kDead:
      return "DEAD";
    case VerdictClass::kFrozen:
      return "FROZEN";
    case VerdictClass::kNanOrigin:
    case VerdictClass::kCorruptOutput:
      return "NUMERICS";
    default:
      return "HANG";
  }
}

std::string Ranks(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) {
    if (!out.empty()) out += ",";
    out += r >= 0 ? std::to_string(r) : "file" + std::to_string(-1 - r);
  }
  return out.empty() ? "-" : out;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", s);
  return buf;
}

// Lists that grow with the job (who waits, who has no file) as ranges: "0-2047,2049-4095", so a
// line stays a line at any size.
std::string RankRanges(const std::vector<int>& ranks) {
  if (ranks.empty()) return "-";
  const std::string list = RankList(ranks);
  return list.substr(list.find(' ') + 1);
}

// "step 12, backward (innermost: layer3)", "steps 100-163, forward"; without the innermost range
// when `brief`, unless there is no phase.
std::string PlaceName(const Verdict::Place& p, bool brief = false) {
  trace::NvtxWhere w;
  w.has_step = p.has_step && p.step == p.last_step;
  w.step = p.step;
  w.phase = p.phase;
  w.range = brief && !p.phase.empty() ? "" : p.range;
  std::string out = trace::NvtxWhereText(w);
  if (p.has_step && p.step != p.last_step) {
    const std::string steps = "steps " + std::to_string(p.step) + "-" + std::to_string(p.last_step);
    out = out.empty() ? steps : steps + ", " + out;
  }
  return out;
}

// The first place of a role, "" when the role has none.
std::string FirstPlace(const Verdict& v, const std::string& role) {
  for (const Verdict::Place& p : v.where) {
    if (p.role == role) return PlaceName(p, true);
  }
  return "";
}

// For the headline: "culprit in step 12, backward; victims in step 12, optimizer", or one place
// when both sides were in the same one. The where lines give the innermost ranges.
std::string PlacesBrief(const Verdict& v) {
  const std::string culprit = FirstPlace(v, "culprit"), victim = FirstPlace(v, "victim");
  if (culprit == victim) return culprit.empty() ? "" : "in " + culprit;
  std::string out = culprit.empty() ? "" : "culprit in " + culprit;
  if (!victim.empty()) out += (out.empty() ? "" : "; ") + std::string("victims in ") + victim;
  return out;
}

}  // namespace

std::string VerdictHeadline(const Verdict& v) {
  // A suspect is never worded as a hang: nobody should act on it yet.
  std::string out = std::string(IsSuspect(v) ? "SUSPECT" : Headword(v.cls)) + " (" +
                    VerdictClassName(v.cls) + ")";
  if (v.comm_id != 0) {
    char id[32];
    std::snprintf(id, sizeof(id), "%016llx", static_cast<unsigned long long>(v.comm_id));
    out += " comm " + (v.comm_name.empty() ? std::string(id) : v.comm_name) + " (" +
           std::string(id).substr(0, 8) + "…)";
  }
  if (!v.op.empty()) out += " " + v.op + (v.seq != 0 ? " #" + std::to_string(v.seq) : "");
  if (v.fr_p2p_seq_id > 0) {
    out += " (p2p_seq_id " + std::to_string(v.fr_p2p_seq_id) + " on rank " +
           std::to_string(v.fr_p2p_rank) + ")";
  }
  out += ": " + v.summary;
  if (v.tie) out += " [tie: " + Ranks(v.culprits) + "]";
  if (!v.stall.stage.empty()) {
    out += " [stage " + v.stall.stage + ": rank " + std::to_string(v.stall.rank);
    if (!v.stall.side.empty()) out += " " + v.stall.side;
    if (v.stall.peer >= 0) out += " peer " + std::to_string(v.stall.peer);
    if (v.stall.channel >= 0) out += " channel " + std::to_string(v.stall.channel);
    out += "]";
  }
  if (const std::string where = PlacesBrief(v); !where.empty()) out += " [" + where + "]";
  if (v.cls != VerdictClass::kHealthy) out += "; since " + Seconds(v.since_s);
  return out;
}

std::string RenderText(const Analysis& a, bool verbose) {
  std::string out;
  if (!a.usable) {
    out += "UNUSABLE: no readable ring file\n";
  }
  for (const Verdict& v : a.verdicts) {
    out += VerdictHeadline(v) + "\n";
    if (v.cls != VerdictClass::kHealthy) {
      out += "  culprits " + Ranks(v.culprits) + "; victims " + Ranks(v.victims);
      if (v.unseen_count > 0) {
        out += "; not seen here " + (static_cast<int>(v.unseen.size()) == v.unseen_count
                                         ? RankRanges(v.unseen)
                                         : std::to_string(v.unseen_count) + " member(s)");
      }
      out += "\n";
    }
    for (const Verdict::Place& p : v.where) {
      out += "  where: " + p.role + (p.ranks.size() > 1 ? "s ranks " : " rank ") +
             RankRanges(p.ranks) + " in " + PlaceName(p) +
             (p.basis.empty() ? "" : " (" + p.basis + ")") + "\n";
    }
    if (IsHang(v.cls)) {
      out +=
          std::string(v.confirmed ? "  confirmed: " : "  not confirmed: ") + v.confirmed_by + "\n";
    }
    if (!v.activity.empty()) out += "  culprit now: " + v.activity + "\n";
    for (const Evidence& e : v.evidence) {
      out += "  rank " + Ranks({e.rank});
      if (e.fr_record_id >= 0) {
        out += " record_id " + std::to_string(e.fr_record_id);
      } else if (e.has_record) {
        out += " record " + std::to_string(e.record_index);
      }
      out += ": " + e.text + "\n";
    }
  }
  // An unusable analysis has no verdict at all.
  const bool healthy = a.verdicts.size() == 1 && a.verdicts.front().cls == VerdictClass::kHealthy;
  if (verbose || (!a.verdicts.empty() && !healthy)) {
    for (const WaitingOn& w : a.waiting) {
      out += "waiting: " + w.comm_name + " " + w.op + " #" + std::to_string(w.seq) + ": issued " +
             RankRanges(w.issued) + ", not issued " + RankRanges(w.not_issued) + ", completed " +
             RankRanges(w.completed) +
             (w.unseen > 0 ? ", not seen " + std::to_string(w.unseen) : std::string()) + " (" +
             Seconds(w.since_s) + ")\n";
    }
  }
  const InputReport& in = a.input;
  std::string input = "input: " + std::to_string(in.files - in.digest_ranks) + " " + in.file_kind;
  if (in.digest_ranks > 0)
    input += ", " + std::to_string(in.digest_ranks) + " rank(s) from digests";
  if (in.world_size > 0) {
    input += "; saw " + std::to_string(in.ranks_seen) + " of " + std::to_string(in.world_size) +
             " ranks";
  }
  if (!in.missing_ranks.empty()) input += "; no file for ranks " + RankRanges(in.missing_ranks);
  if (!in.unreadable_ranks.empty()) {
    input += "; unreadable file for ranks " + RankRanges(in.unreadable_ranks);
  }
  if (!in.wrapped_ranks.empty()) input += "; wrapped: " + RankRanges(in.wrapped_ranks);
  if (!in.torn_ranks.empty()) input += "; torn records: " + RankRanges(in.torn_ranks);
  if (!in.dropped_ranks.empty()) input += "; dropped records: " + RankRanges(in.dropped_ranks);
  out += input + "\n";
  for (const std::string& e : in.unreadable) out += "input: unreadable " + e + "\n";
  for (const std::string& n : in.notes) out += "input: " + n + "\n";
  return out;
}

}  // namespace ncclscope::hang_detector
