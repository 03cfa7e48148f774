// Stage two of a hang verdict: suspect or confirmed. A wait past the short threshold is only a
// suspect; anything that acts (abort, paging) waits for a confirmed hang. A verdict is confirmed
// when its culprit is shown not to be working (gone, frozen, ranks that disagree, a wait-for
// cycle, a job that ended with the wait outstanding), or when the wait outlasts what this job has
// shown to be normal: a rank that paused 40 s for a checkpoint once may pause 40 s again, and
// every rank that waited for it shows that pause in its own records too.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "hang_detector/decision/steps.h"
#include "hang_detector/ingest/presence_files.h"
#include "trace/nccl_names.h"

namespace ncclscope::hang_detector {
namespace {

bool IsOperation(uint32_t op) {
  const auto t = static_cast<trace::OpType>(op);
  return trace::IsCollective(t) || trace::IsP2P(t);
}

// The longest stretch any rank shows (RankFile::LongestPauseNs). The open stretch after each
// rank's newest operation is the one being judged and does not count.
double LongestPauseS(const JobIndex& index) {
  int64_t longest = 0;
  for (const RankFile& f : index.files()) longest = std::max(longest, f.LongestPauseNs());
  return static_cast<double>(longest) * 1e-9;
}

// A running process whose heartbeat is this old is frozen beyond doubt; a shorter silence can be
// a starved machine (40 processes on 2 cores have kept a heartbeat thread off the CPU for 10 s).
constexpr double kFrozenProofS = 30;

// A frozen verdict proves itself when every culprit is stopped (state T) or silent long enough.
bool FrozenBeyondDoubt(const Context& ctx, const Verdict& v) {
  for (const int r : v.culprits) {
    const int f = ctx.FileOf(r);
    if (f < 0) return false;
    const RankLiveness& l = ctx.live[static_cast<uint32_t>(f)];
    if (l.process != ProcessState::kStopped && l.silent_s < kFrozenProofS) return false;
  }
  return !v.culprits.empty();
}

// Classes whose evidence is itself the proof that no rank involved can go on.
const char* ProofOf(const Context& ctx, const Verdict& v) {
  switch (v.cls) {
    case VerdictClass::kDead:
      return "the culprit's process is gone while others need it";
    case VerdictClass::kFrozen:
      return FrozenBeyondDoubt(ctx, v)
                 ? "the culprit's process is stopped, or silent for 30 s or more"
                 : nullptr;
    case VerdictClass::kDesync:
      return "the ranks issued different operations: none of them can complete";
    default:
      return nullptr;
  }
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.1f s" : "%.0f s", s);
  return buf;
}

const char* StateWords(char state) {
  switch (state) {
    case 'R':
      return "running on a CPU";
    case 'S':
      return "sleeping";
    case 'D':
      return "in uninterruptible I/O";
    case 'T':
    case 't':
      return "stopped";
    default:
      return nullptr;
  }
}

const char* LivenessWords(Liveness l) {
  switch (l) {
    case Liveness::kAlive:
      return "alive";
    case Liveness::kFinished:
      return "exited";
    case Liveness::kEnded:
      return "ended with the job";
    case Liveness::kDead:
      return "gone";
    case Liveness::kFrozen:
      return "frozen";
    case Liveness::kAborted:
      return "aborted by its watchdog";
  }
  return "unknown";
}

// The newest collective or send/recv of a file; -1 when it has none.
int64_t NewestOperation(const RankFile& f) {
  for (int64_t p = static_cast<int64_t>(f.size()) - 1; p >= 0; --p) {
    if (IsOperation(f.ShapeAt(static_cast<uint32_t>(p)).op)) return p;
  }
  return -1;
}

std::string OperationName(const Context& ctx, const RankFile& f, uint32_t pos) {
  const OpShape& s = f.ShapeAt(pos);
  std::string out;
  if (const CommModel* c = ctx.index.FindComm(s.comm_id)) out = ctx.CommName(*c) + " ";
  out += trace::OpTypeName(static_cast<trace::OpType>(s.op));
  return out + " #" + std::to_string(f.ops[pos].seq);
}

// "rank 5: alive (pid 812, sleeping, 41.2 s CPU), outside NCCL for 8.1 s since tp allreduce #11".
std::string RankActivity(const Context& ctx, int rank) {
  const std::string name = "rank " + std::to_string(rank);
  const int fi = ctx.FileOf(rank);
  if (fi < 0) return name + ": no ring file";
  const RankFile& f = ctx.index.files()[static_cast<uint32_t>(fi)];
  const RankLiveness& l = ctx.live[static_cast<uint32_t>(fi)];
  // Files that name no process (Flight Recorder dumps) say so rather than "pid 0".
  std::string out = name + ": " + LivenessWords(l.state) +
                    (f.snap->pid > 0 ? " (pid " + std::to_string(f.snap->pid)
                                     : std::string(" (no process information"));
  if (l.local && l.state == Liveness::kAlive && ctx.options.probe != nullptr) {
    const ProcessActivity a = ctx.options.probe->Activity(f.snap->pid);
    if (const char* words = StateWords(a.state)) out += std::string(", ") + words;
    if (a.cpu_s >= 0) out += ", " + Seconds(a.cpu_s) + " CPU";
  } else if (!l.local && !f.snap->host.empty()) {
    out += " on " + f.snap->host;
  }
  out += ")";
  if (f.oldest_waiting_pos != kNoRecord) {
    return out + ", waiting in " + OperationName(ctx, f, f.oldest_waiting_pos) + " for " +
           Seconds(std::max(0.0, ctx.SinceS(f.Wall(f.oldest_waiting_enter))));
  }
  if (IsPresence(f))
    return out + ", never called NCCL since it started " + ctx.Ago(f.snap->start_realtime_ns);
  const int64_t last = NewestOperation(f);
  if (last < 0) return out + ", no operation recorded yet";
  const OpRecord& r = f.ops[static_cast<uint32_t>(last)];
  const int64_t since = std::max({r.t_enter_ns, r.t_exit_ns, r.t_device_done_ns});
  return out + ", outside NCCL for " + Seconds(std::max(0.0, ctx.SinceS(f.Wall(since)))) +
         " since " + OperationName(ctx, f, static_cast<uint32_t>(last));
}

// Which bound of the confirmation rule set the threshold, in words.
std::string RuleWords(const AnalyzeOptions& o, double learned, double after, double longest) {
  char factor[32];
  std::snprintf(factor, sizeof factor, "%g", o.confirm_factor);
  if (after >= o.confirm_ceiling_s) return "the ceiling";
  if (learned > o.confirm_floor_s) {
    return std::string(factor) + " x the longest pause this job has shown, " + Seconds(longest);
  }
  return "the floor; the longest pause this job has shown is " + Seconds(longest);
}

std::string Activity(const Context& ctx, const Verdict& v) {
  constexpr size_t kMaxDescribed = 4;
  std::string out;
  for (size_t i = 0; i < v.culprits.size() && i < kMaxDescribed; ++i) {
    if (i > 0) out += "; ";
    out += RankActivity(ctx, v.culprits[i]);
  }
  if (v.culprits.size() > kMaxDescribed) {
    out += "; and " + std::to_string(v.culprits.size() - kMaxDescribed) + " more";
  }
  return out;
}

}  // namespace

void ConfirmHangs(const Context& ctx, std::vector<Verdict>* verdicts) {
  const AnalyzeOptions& o = ctx.options;
  double longest = -1;  // computed once, only when a verdict needs it
  for (Verdict& v : *verdicts) {
    if (!IsHang(v.cls)) continue;
    v.activity = Activity(ctx, v);
    if (v.confirmed) continue;  // its detector proved it (a wait-for cycle, disagreeing peers)
    if (const char* proof = ProofOf(ctx, v)) {
      v.confirmed = true;
      v.confirmed_by = proof;
      continue;
    }
    if (ctx.post_mortem && !o.snapshot) {
      v.confirmed = true;
      v.confirmed_by = "the job ended with this wait outstanding";
      continue;
    }
    if (longest < 0) longest = LongestPauseS(ctx.index);
    const double learned = o.confirm_factor * longest;
    const double after = std::min(o.confirm_ceiling_s, std::max(o.confirm_floor_s, learned));
    v.confirm_after_s = after;
    const std::string rule = Seconds(after) + " (" + RuleWords(o, learned, after, longest) + ")";
    if (v.since_s >= after) {
      v.confirmed = true;
      v.confirmed_by_time = true;
      v.confirmed_by = "waited " + Seconds(v.since_s) + ", past " + rule;
    } else {
      v.confirmed_by = "a suspect: confirmed at " + rule +
                       " unless it progresses, or as soon as a culprit dies or freezes";
    }
  }
  // What may be acted on comes first; the order is otherwise the correlator's.
  std::stable_partition(verdicts->begin(), verdicts->end(),
                        [](const Verdict& v) { return IsConfirmedHang(v); });
}

}  // namespace ncclscope::hang_detector
