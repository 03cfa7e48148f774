// Which writers are alive, finished, dead or frozen. A process check only means something for files
// of this host; elsewhere the heartbeat is all there is. When no writer is alive any more (the
// launcher killed the job, or it ended), "now" is meaningless for the verdicts: every rank would
// look dead. The reference time becomes the job's last sign of life instead, and only a rank that
// fell silent well before the others is singled out.
#include <algorithm>
#include <climits>
#include <cstdio>

#include "hang_detector/decision/steps.h"
#include "hang_detector/ingest/presence_files.h"
#include "trace/nccl_names.h"
#include "trace/ring_layout.h"

namespace ncclscope::hang_detector {
namespace {

bool SameHost(const std::string& file_host, const std::string& this_host) {
  return !this_host.empty() && file_host == this_host.substr(0, trace::kHostBytes - 1);
}

// The newest time a file shows: its heartbeat or its last record (written after the last beat).
int64_t LastSignOfLife(const RankFile& f) {
  int64_t t = f.heartbeat_wall;
  if (f.size() > 0) {
    const trace::RecordData r = f.At(f.size() - 1);
    t = std::max({t, f.Wall(r.t_enter_ns), r.t_exit_ns > 0 ? f.Wall(r.t_exit_ns) : t});
  }
  return t;
}

// How long a file's heartbeat may be silent before its writer counts as gone. Another host's ring
// file read through a shared filesystem arrives late while the job runs; post mortem the files
// are complete (gathered after the end) and only compared to each other: the short bound holds.
double StaleBound(const AnalyzeOptions& o, const RankLiveness& l, bool post_mortem) {
  return l.foreign && !post_mortem ? std::max(o.stale_s, o.foreign_stale_s) : o.stale_s;
}

// A presence file's heartbeat never beats: its writer is judged by its process alone.
Liveness Classify(const RankLiveness& l, bool aborted, bool finished, bool post_mortem,
                  double stale_s, bool presence) {
  if (aborted) return Liveness::kAborted;
  if (finished) return Liveness::kFinished;
  const bool silent = !presence && l.silent_s > stale_s;
  switch (l.process) {
    case ProcessState::kStopped:
      return Liveness::kFrozen;
    case ProcessState::kGone:
      return !post_mortem || silent ? Liveness::kDead : Liveness::kEnded;
    case ProcessState::kRunning:
      return silent ? Liveness::kFrozen : (post_mortem ? Liveness::kEnded : Liveness::kAlive);
    case ProcessState::kUnknown:
      break;
  }
  if (silent) return Liveness::kDead;  // unresponsive; its process could not be checked
  return post_mortem ? Liveness::kEnded : Liveness::kAlive;
}

}  // namespace

void AssessLiveness(Context* ctx) {
  const auto& files = ctx->index.files();
  const AnalyzeOptions& o = ctx->options;
  const std::string this_host = o.probe != nullptr ? o.probe->ThisHost() : std::string();
  ctx->live.assign(files.size(), {});
  bool any_alive = false;
  int64_t last_sign = INT64_MIN;
  for (size_t i = 0; i < files.size(); ++i) {
    const RankFile& f = files[i];
    RankLiveness& l = ctx->live[i];
    if (f.remote.has_value()) {
      // Its own node looked at the process; this host cannot (local stays false: no probe here).
      l.process = f.remote->process;
    } else {
      l.local = SameHost(f.snap->host, this_host);
      if (l.local) l.process = o.probe->State(f.snap->pid);
    }
    l.foreign = !f.remote.has_value() && !this_host.empty() && !l.local;
    const double stale_s = StaleBound(o, l, /*post_mortem=*/false);
    const bool finished = (f.snap->flags & trace::kHeaderFinished) != 0;
    const double age = static_cast<double>(o.now_wall_ns - f.heartbeat_wall) * 1e-9;
    const bool exists = l.process == ProcessState::kRunning || l.process == ProcessState::kStopped;
    const bool beating = !IsPresence(f) && l.process == ProcessState::kUnknown && age < stale_s;
    if (!finished && (exists || beating)) {
      any_alive = true;
    }
    last_sign = std::max(last_sign, LastSignOfLife(f));
  }
  ctx->post_mortem = o.job_ended || !any_alive;
  ctx->ref_wall = ctx->post_mortem && last_sign != INT64_MIN ? last_sign : o.now_wall_ns;
  for (size_t i = 0; i < files.size(); ++i) {
    RankLiveness& l = ctx->live[i];
    l.silent_s = std::max(0.0, ctx->SinceS(files[i].heartbeat_wall));
    const bool finished = (files[i].snap->flags & trace::kHeaderFinished) != 0;
    const bool aborted = (files[i].snap->flags & trace::kHeaderWatchdogAborted) != 0;
    l.state = Classify(l, aborted, finished, ctx->post_mortem, StaleBound(o, l, ctx->post_mortem),
                       IsPresence(files[i]));
  }
}

namespace {

// A presence file's writer: started as the rank, never called NCCL.
std::string PresenceText(const Context& ctx, uint32_t file) {
  const RankLiveness& l = ctx.live[file];
  const RankFile& f = ctx.index.files()[file];
  const trace::RingInfo& s = *f.snap;
  const char* state = "was started";
  switch (l.state) {
    case Liveness::kFinished:
      state = "exited (finished flag set)";
      break;
    case Liveness::kFrozen:
      state = "exists but is stopped (state T)";
      break;
    case Liveness::kDead:
      state = "is gone";
      break;
    case Liveness::kEnded:
      state = "ended with the job";
      break;
    default:
      if (l.process == ProcessState::kRunning) {
        state = "is alive";
      } else if (!l.local && !f.remote.has_value()) {
        state = "was started (another host: not checked)";
      }
  }
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "pid %d on %s %s and never called NCCL: its presence file, written when it "
                "started %s, is all there is of it",
                s.pid, s.host.c_str(), state, ctx.Ago(s.start_realtime_ns).c_str());
  return buf;
}

std::string LivenessText(const Context& ctx, uint32_t file) {
  if (IsPresence(ctx.index.files()[file])) return PresenceText(ctx, file);
  const RankLiveness& l = ctx.live[file];
  const trace::RingInfo& s = *ctx.index.files()[file].snap;
  char buf[256];
  const char* other = ctx.post_mortem ? "before the job's last heartbeat" : "ago";
  switch (l.state) {
    case Liveness::kFinished:
      std::snprintf(buf, sizeof(buf),
                    "pid %d on %s exited (finished flag set), last heartbeat %.1f s %s", s.pid,
                    s.host.c_str(), l.silent_s, other);
      break;
    case Liveness::kAborted:
      std::snprintf(buf, sizeof(buf),
                    "pid %d on %s: its watchdog aborted its communicators on a confirmed hang "
                    "(NCCLSCOPE_ON_HANG=abort)",
                    s.pid, s.host.c_str());
      break;
    case Liveness::kFrozen:
      std::snprintf(
          buf, sizeof(buf), "pid %d on %s exists but %s; heartbeat stale for %.1f s", s.pid,
          s.host.c_str(),
          l.process == ProcessState::kStopped ? "is stopped (state T)" : "makes no progress",
          l.silent_s);
      break;
    default:
      if (const RankFile& f = ctx.index.files()[file]; f.remote.has_value()) {
        // Who looked: the digest's node, not this host.
        std::snprintf(buf, sizeof(buf),
                      "pid %d on %s %s (its node's digest, %s); heartbeat %.1f s %s", s.pid,
                      s.host.c_str(), l.process == ProcessState::kGone ? "is gone" : "is silent",
                      f.remote->source.c_str(), l.silent_s, other);
        break;
      }
      std::snprintf(buf, sizeof(buf), "pid %d on %s %s; heartbeat stopped %.1f s %s", s.pid,
                    s.host.c_str(),
                    l.process == ProcessState::kGone ? "is gone"
                    : l.local                        ? "is not responding"
                                                     : "is silent (other host, not checked)",
                    l.silent_s, other);
  }
  return buf;
}

// The newest collective or p2p record of a file, else its newest record; -1 when empty.
int64_t LastOpPos(const RankFile& f) {
  for (int64_t p = static_cast<int64_t>(f.size()) - 1; p >= 0; --p) {
    const auto op = static_cast<trace::OpType>(f.ShapeAt(static_cast<uint32_t>(p)).op);
    if (trace::IsCollective(op) || trace::IsP2P(op)) return p;
  }
  return static_cast<int64_t>(f.size()) - 1;
}

void AddLastRecords(const Context& ctx, uint32_t file, Verdict* v) {
  const RankFile& f = ctx.index.files()[file];
  Evidence header;
  header.rank = ctx.RankOf(file);
  header.has_record = false;
  header.text = LivenessText(ctx, file);
  v->evidence.push_back(header);
  const int64_t last = static_cast<int64_t>(f.size()) - 1;
  const int64_t last_op = LastOpPos(f);
  auto add = [&](int64_t p, const char* label) {
    const auto& r = f.At(static_cast<uint32_t>(p));
    std::string what = label + DescribeOp(r);
    if (const CommModel* c = ctx.index.FindComm(r.comm_id)) what += " on " + ctx.CommName(*c);
    if (r.result == trace::kResultInCall) {
      what += ", still in the call";
    } else if (r.t_device_done_ns > 0) {
      what += ", completed";
    } else if (trace::IsPending(r.t_device_done_ns)) {
      what += ", pending";
    }
    v->evidence.push_back(ctx.RecordEvidence(file, static_cast<uint32_t>(p), what));
  };
  if (last_op >= 0) add(last_op, "last operation: ");
  if (last >= 0 && last != last_op) add(last, "last record: ");
}

// "rank 2 died or exited and rank 3 froze".
std::string LostWords(const std::vector<int>& gone, const std::vector<int>& frozen) {
  std::string out;
  if (!gone.empty()) out = RankList(gone) + " died or exited";
  if (!frozen.empty()) out += (out.empty() ? "" : " and ") + RankList(frozen) + " froze";
  return out;
}

// What the lost ranks left undone, by the class of the wait they explain.
const char* BeforeWhat(VerdictClass c) {
  switch (c) {
    case VerdictClass::kMissing:
      return "before issuing it";
    case VerdictClass::kDeviceStall:
      return "with it in flight (every member issued it)";
    case VerdictClass::kP2PDeadlock:
      return "before issuing the matching send/recv";
    case VerdictClass::kInitHang:
      return "before joining it";
    default:
      return "while others needed it";
  }
}

bool Convertible(VerdictClass c) {
  return c == VerdictClass::kMissing || c == VerdictClass::kInitHang ||
         c == VerdictClass::kP2PDeadlock || c == VerdictClass::kDeviceStall;
}

}  // namespace

void ApplyLiveness(const Context& ctx, std::vector<Verdict>* verdicts) {
  std::vector<bool> named(ctx.index.files().size(), false);
  for (Verdict& v : *verdicts) {
    if (!Convertible(v.cls)) continue;
    // Every participant that is gone or frozen explains the wait better than the wait itself.
    std::vector<int> gone, frozen;
    std::vector<int> candidates = v.culprits;
    if (v.cls == VerdictClass::kDeviceStall)
      candidates.insert(candidates.end(), v.victims.begin(), v.victims.end());
    for (int rank : candidates) {
      const int f = ctx.FileOf(rank);
      if (f < 0) continue;
      const Liveness l = ctx.live[f].state;
      // A rank that exited normally while others wait for its operations is gone too early.
      const bool exited_early = l == Liveness::kFinished && v.cls != VerdictClass::kDeviceStall;
      if (l == Liveness::kDead || exited_early) gone.push_back(rank);
      if (l == Liveness::kFrozen) frozen.push_back(rank);
    }
    SortUnique(&gone);
    SortUnique(&frozen);
    std::vector<int> chosen = gone;
    chosen.insert(chosen.end(), frozen.begin(), frozen.end());
    SortUnique(&chosen);
    if (chosen.empty()) continue;
    const bool all = chosen.size() >= v.culprits.size();
    if (v.cls == VerdictClass::kDeviceStall || all) {
      // The gone and the frozen take over as culprits (the class says the harder fault: a frozen
      // rank among dead ones is named with them, not left to a verdict of its own); everyone else
      // involved only waits. The summary is told anew: the detector's text named other culprits.
      std::vector<int> victims = candidates;
      victims.insert(victims.end(), v.victims.begin(), v.victims.end());
      std::erase_if(victims,
                    [&](int r) { return std::binary_search(chosen.begin(), chosen.end(), r); });
      SortUnique(&victims);
      v.summary = LostWords(gone, frozen) + " " + BeforeWhat(v.cls) + "; " + RanksWait(victims);
      v.cls = gone.empty() ? VerdictClass::kFrozen : VerdictClass::kDead;
      v.culprits = chosen;
      v.victims = victims;
      v.tie = false;
    }
    for (int rank : chosen) {
      const int f = ctx.FileOf(rank);
      named[f] = true;
      AddLastRecords(ctx, static_cast<uint32_t>(f), &v);
    }
  }
  for (const Verdict& v : *verdicts) {
    for (int rank : v.culprits) {
      const int f = ctx.FileOf(rank);
      if (f >= 0) named[f] = true;
    }
  }
  // Dead or frozen ranks nobody was found waiting on: still worth a verdict of their own.
  const auto& files = ctx.index.files();
  for (uint32_t f = 0; f < files.size(); ++f) {
    const Liveness l = ctx.live[f].state;
    if (named[f] || (l != Liveness::kDead && l != Liveness::kFrozen)) continue;
    Verdict v;
    v.cls = l == Liveness::kDead ? VerdictClass::kDead : VerdictClass::kFrozen;
    v.culprits = {ctx.RankOf(f)};
    v.since_s = ctx.live[f].silent_s;
    const int64_t p = LastOpPos(files[f]);
    if (p >= 0) {
      const auto& r = files[f].At(static_cast<uint32_t>(p));
      if (const CommModel* c = ctx.index.FindComm(r.comm_id)) {
        v.comm_id = c->id;
        v.comm_name = ctx.CommName(*c);
      }
      v.op = trace::OpTypeName(static_cast<trace::OpType>(r.op));
      v.seq = r.seq;
    }
    v.summary = RankList(v.culprits) + (l == Liveness::kDead ? " is gone" : " is frozen") +
                "; no rank was found waiting on it yet";
    AddLastRecords(ctx, f, &v);
    verdicts->push_back(std::move(v));
  }
}

}  // namespace ncclscope::hang_detector
