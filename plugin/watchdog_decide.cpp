// The watchdog's looks at the job, on its own thread: who decides for the node, the decider's
// correlation, report and published decision, and the other ranks following that decision.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "hang_detector/correlator.h"
#include "hang_detector/verdict_json.h"
#include "hang_detector/verdict_text.h"
#include "plugin/incident_report.h"
#include "plugin/nccl_symbols.h"
#include "plugin/runtime.h"
#include "plugin/warn.h"
#include "plugin/watchdog.h"
#include "plugin/watchdog_decision.h"
#include "plugin/watchdog_stderr.h"
#include "trace/clock.h"

namespace ncclscope::plugin {

namespace hd = hang_detector;

bool Watchdog::Decides() {
  if (no_lock_ || lock_.held()) return true;
  std::string error;
  switch (lock_.TryAcquire(NodeLockPath(dir_, job_key_), rt_->ring->GlobalRank(), &error)) {
    case NodeLock::Result::kHeld:
      return true;
    case NodeLock::Result::kOther:
      return false;
    case NodeLock::Result::kNoLock:
      // Without the lock every stalled rank correlates, as before there was one: the incident's
      // claim files (incident_report.h) still keep the reports to one per stage.
      no_lock_ = true;
      Warn("watchdog cannot lock %s; every stalled rank of this node correlates", error.c_str());
      return true;
  }
  return true;
}

Watchdog::Outcome Watchdog::Correlate(const StallState& s) {
  std::vector<std::string> notes;
  std::string error;
  // One reader thread: this runs inside a training process, next to its own threads.
  const std::optional<hd::JobIndex> index = cache_.Index(dir_, job_, &notes, &error);
  if (!index) {
    WarnOnce(WarnKey::kWatchdog, "watchdog cannot read %s: %s", dir_.c_str(), error.c_str());
    return Outcome::kSettled;  // nothing to correlate: do not retry this incident
  }
  hd::AnalyzeOptions o;
  o.now_wall_ns = trace::RealtimeNs();
  o.probe = probe_.get();
  // The stall already lasted T: waits shorter than half of it are still progress to the
  // correlator, and a writer is only stale after many missed heartbeats.
  o.stall_s = std::min(2.0, static_cast<double>(s.threshold_ns) * 0.5e-9);
  // A loaded machine can keep a rank's heartbeat thread off the CPU for seconds: only a long
  // silence says frozen (a gone process is seen at once by its pid).
  o.stale_s = std::max(10.0, 20 * options_.heartbeat_s);
  o.confirm_floor_s = options_.confirm_floor_s;
  o.confirm_factor = options_.confirm_factor;
  o.confirm_ceiling_s = options_.confirm_ceiling_s;
  hd::Analysis a = hd::Analyze(*index, o);
  a.input.notes.insert(a.input.notes.end(), notes.begin(), notes.end());
  // Published before anything is reported or aborted: the other ranks act on it at their next
  // tick.
  Publish(a, o.now_wall_ns);
  if (!a.usable || a.verdicts.empty() || !hd::IsHang(a.verdicts.front().cls)) {
    return Outcome::kNothing;
  }
  const hd::Verdict& v = a.verdicts.front();
  if (hd::IsSuspect(v)) {
    if (!reported_ && ClaimIncident(dir_, v, onset_wall_ns_, "suspect")) Report(a, "suspect");
    return Outcome::kSuspect;
  }
  if (ClaimIncident(dir_, v, onset_wall_ns_, "hang")) Report(a, "hang");
  if (options_.abort_on_hang) {
    AbortCommunicators(CommsToAbort(DecisionFromAnalysis(a), rt_->ring->GlobalRank()));
  }
  return Outcome::kSettled;
}

void Watchdog::Publish(const hd::Analysis& a, int64_t written_wall_ns) {
  if (no_lock_) return;  // nobody follows a decision when every rank decides
  Decision d = DecisionFromAnalysis(a);
  d.job = job_key_;
  d.holder_pid = static_cast<int>(getpid());
  d.holder_rank = rt_->ring->GlobalRank();
  d.written_wall_ns = written_wall_ns;
  d.onset_wall_ns = onset_wall_ns_;
  d.passes = ++passes_;
  std::string error;
  if (!WriteFileAtomically(dir_, DecisionName(job_key_), RenderDecision(d), &error)) {
    WarnOnce(WarnKey::kWatchdog, "watchdog cannot write its decision: %s", error.c_str());
  }
}

void Watchdog::FollowDecision() {
  const std::string path = dir_ + "/" + DecisionName(job_key_);
  std::string text;
  if (ReadSmallFile(path, &text) != 0 || text == last_decision_) return;
  last_decision_ = text;
  std::vector<uint64_t> comms;
  std::string error;
  switch (
      FollowDecisionText(text, job_key_, onset_wall_ns_, rt_->ring->GlobalRank(), &comms, &error)) {
    case Follow::kWait:
      return;
    case Follow::kIgnored:
      // Hostile or damaged: nothing acts on it. The decider's next look replaces it.
      if (!warned_decision_) {
        warned_decision_ = true;
        Warn("watchdog ignores %s: %s", path.c_str(), error.c_str());
      }
      return;
    case Follow::kAct:
      if (options_.abort_on_hang) AbortCommunicators(comms);
      settled_ = true;
      return;
  }
}

void Watchdog::Report(const hd::Analysis& a, const char* stage) {
  std::string error;
  const std::string path = dir_ + "/" + kVerdictFile;
  if (!WriteFileAtomically(dir_, kVerdictFile, hd::RenderJson(a) + "\n", &error)) {
    WarnOnce(WarnKey::kWatchdog, "watchdog cannot write its verdict: %s", error.c_str());
    return;
  }
  reported_ = true;
  last_reported_ = a;
  const int rank = rt_->ring->GlobalRank();
  const int pid = static_cast<int>(getpid());
  if (std::string(stage) == "hang") {
    WriteStderr(VerdictBlock(a, path, rank, pid));
    return;
  }
  // A suspect is one line: someone may look, nobody should act.
  const hd::Verdict& v = a.verdicts.front();
  WriteStderr("ncclscope: watchdog of rank " + std::to_string(rank) + " (pid " +
              std::to_string(pid) + "): " + hd::VerdictHeadline(v) + "; " + v.confirmed_by + "; " +
              path + "\n");
}

void Watchdog::AbortCommunicators(const std::vector<uint64_t>& ids) {
  // The communicators the hang verdicts name and those the decision says this rank waits in
  // (CommsToAbort), and every one this rank still has work in flight on. The rank is stalled
  // behind a confirmed hang: work it issued on another communicator behind the stuck one (a
  // broadcast after an AllReduce that waits for a dead peer) would hold its host thread in the
  // next synchronize, short of its error handling, and the decision's view of what each rank
  // waits in can miss it (a dead peer's last record, never stamped complete, stands in front).
  // As PyTorch's watchdog aborts its process group's communicators on a timeout.
  const int me = rt_->ring->GlobalRank();
  auto real_abort = NCCLSCOPE_REAL(CommAbort);
  if (real_abort == nullptr) return;
  const auto in_flight_end = in_flight_.ids.begin() + static_cast<ptrdiff_t>(in_flight_.count);
  rt_->comms.ForEach([&](void* handle, CommState* cs) {
    if (std::find(ids.begin(), ids.end(), cs->id) == ids.end() &&
        std::find(in_flight_.ids.begin(), in_flight_end, cs->id) == in_flight_end) {
      return;
    }
    if (cs->aborted_by_watchdog.exchange(true)) return;
    const ncclResult_t r = real_abort(static_cast<ncclComm_t>(handle));
    Warn("NCCLSCOPE_ON_HANG=abort: aborted communicator %s (%016llx) of rank %d: %s",
         cs->name.c_str(), static_cast<unsigned long long>(cs->id), me,
         r == ncclSuccess ? "ok" : "ncclCommAbort failed");
  });
}

}  // namespace ncclscope::plugin
