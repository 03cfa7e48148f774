// The watchdog's looks at the job, on its own thread: who decides for the node, the decider's look
// (correlation, the incident carried on by the shared lifecycle, the record, the report), and the
// other ranks following the record.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "hang_detector/decision/correlator.h"
#include "hang_detector/incident/incident_files.h"
#include "hang_detector/incident/incident_key.h"
#include "hang_detector/incident/incident_lifecycle.h"
#include "hang_detector/verdicts/verdict_json.h"
#include "hang_detector/verdicts/verdict_text.h"
#include "plugin/core/nccl_symbols.h"
#include "plugin/core/warn.h"
#include "plugin/runtime/probe_record.h"
#include "plugin/runtime/runtime.h"
#include "plugin/watchdog/incident_report.h"
#include "plugin/watchdog/watchdog.h"
#include "plugin/watchdog/watchdog_stderr.h"
#include "trace/clock.h"
#include "trace/ring_layout.h"

namespace ncclscope::plugin {

namespace hd = hang_detector;

namespace {

// After a confirmed hang the decider still looks now and then: more ranks block behind it (their
// communicators join what the record has every rank abort), and in report mode the job may go on.
constexpr int64_t kConfirmedLookNs = 10'000'000'000;
// A look planned for the moment a suspect would be confirmed by time comes no sooner than this.
constexpr int64_t kMinLookNs = 100'000'000;

}  // namespace

// One decider per node and job: the node lock, not the exporters' election across nodes
// (docs/design.md, "Why two elections").
bool Watchdog::Decides() {
  if (no_lock_ || lock_.held()) return true;
  std::string error;
  switch (lock_.TryAcquire(hd::NodeLockPath(dir_, job_key_), rt_->ring->GlobalRank(), &error)) {
    case NodeLock::Result::kHeld:
      return true;
    case NodeLock::Result::kOther:
      return false;
    case NodeLock::Result::kNoLock:
      // Without the lock every stalled rank decides: claim files keep each stage's report to one.
      no_lock_ = true;
      Warn("watchdog cannot lock %s; every stalled rank of this node correlates", error.c_str());
      return true;
  }
  return true;
}

hd::IncidentRecord Watchdog::ReadRecord() {
  std::string error;
  std::optional<hd::IncidentRecord> r =
      hd::ReadIncidentRecord(dir_, job_key_, run_start_wall_ns_, &error);
  if (!error.empty() && !warned_record_) {
    // Hostile or damaged: nothing acts on it; the decider's next look replaces it.
    warned_record_ = true;
    Warn("watchdog ignores %s", error.c_str());
  }
  if (r) return *std::move(r);
  hd::IncidentRecord none;
  none.job = job_key_;
  none.job_id = job_;
  none.restart = restart_;
  return none;
}

void Watchdog::WriteRecord(hd::IncidentRecord* r) {
  r->job = job_key_;
  r->job_id = job_;
  r->restart = restart_;
  r->abort_mode = options_.abort_on_hang;
  r->holder_pid = static_cast<int>(getpid());
  r->holder_rank = rt_->ring->GlobalRank();
  r->written_wall_ns = trace::RealtimeNs();
  ++r->passes;
  std::string error;
  if (!hd::WriteFileAtomically(dir_, hd::IncidentRecordName(job_key_), hd::RenderIncident(*r),
                               &error)) {
    WarnOnce(WarnKey::kWatchdog, "watchdog cannot write the job's incident record: %s",
             error.c_str());
  }
}

int64_t Watchdog::Look(const StallState& s, int64_t now_ns) {
  std::vector<std::string> notes;
  std::string error;
  // One reader thread: this runs inside a training process, next to its own threads.
  const std::optional<hd::JobIndex> index = cache_.Index(dir_, job_, &notes, &error);
  if (!index) {
    WarnOnce(WarnKey::kWatchdog, "watchdog cannot read %s: %s", dir_.c_str(), error.c_str());
    return INT64_MAX;  // nothing to correlate: do not retry this incident
  }
  shared_dir_ = shared_dir_ || cache_.saw_other_jobs();
  hd::AnalyzeOptions o;
  o.now_wall_ns = trace::RealtimeNs();
  o.probe = probe_.get();
  // The stall already lasted T: waits shorter than half of it are still progress to the
  // correlator, and a writer is only stale after many missed heartbeats.
  o.stall_s = std::min(2.0, static_cast<double>(std::max<int64_t>(s.threshold_ns, 1)) * 0.5e-9);
  // A loaded machine can keep a rank's heartbeat thread off the CPU for seconds: only a long
  // silence says frozen (a gone process is seen at once by its pid).
  o.stale_s = std::max(10.0, 20 * options_.heartbeat_s);
  o.confirm_floor_s = options_.confirm_floor_s;
  o.confirm_factor = options_.confirm_factor;
  o.confirm_ceiling_s = options_.confirm_ceiling_s;
  hd::Analysis a = hd::Analyze(*index, o);
  a.input.notes.insert(a.input.notes.end(), notes.begin(), notes.end());
  // The recorded incident is a fact: a later look (ranks that aborted since, a new decider) never
  // judges it again.
  const hd::IncidentRecord prev = ReadRecord();
  hd::ApplyIncident(prev, o.now_wall_ns, &a);
  hd::IncidentStep step = hd::Advance(prev, a, o.now_wall_ns);
  hd::IncidentRecord& next = step.next;
  // Written before anything is reported or aborted: the other ranks act on it at once.
  WriteRecord(&next);
  hd::ApplyIncident(next, o.now_wall_ns, &a);
  const char* stage = step.event == hd::IncidentEvent::kSuspected   ? "suspect"
                      : step.event == hd::IncidentEvent::kConfirmed ? "hang"
                                                                    : nullptr;
  // Where no rank can hold the node lock every stalled rank decides: one report per stage still.
  const bool mine =
      !no_lock_ || step.event == hd::IncidentEvent::kNothing ||
      hd::ClaimIncidentStage(dir_, job_key_, next.incident, hd::IncidentStageName(next.stage));
  if (stage != nullptr && mine) Report(a, stage);
  if (step.event == hd::IncidentEvent::kResolved && mine) ReportResolved(next, &a);
  if (next.stage == hd::IncidentStage::kHang && options_.abort_on_hang) {
    AbortCommunicators(hd::CommsToAbort(next, rt_->ring->GlobalRank()));
  }
  if (next.stage == hd::IncidentStage::kHang) return now_ns + kConfirmedLookNs;
  if (next.stage != hd::IncidentStage::kSuspect) return now_ns + options_.reanalyze_ns;
  // A suspect is looked at again less often as it ages: every look correlates the whole job (the
  // cache spares only the reading), and death or freezing of the culprit is still seen within a
  // tenth of its age. But the look that would confirm it by time comes when that time is reached,
  // so the confirmation is never late by the spacing of looks.
  const int64_t age = now_ns - onset_ns_;
  int64_t when = now_ns + std::max(options_.reanalyze_ns, age / 10);
  const hd::Verdict& head = a.verdicts.front();
  if (head.confirm_after_s > head.since_s) {
    const auto due = static_cast<int64_t>((head.confirm_after_s - head.since_s) * 1e9);
    when = std::min(when, now_ns + std::max(kMinLookNs, due));
  }
  return when;
}

void Watchdog::FollowRecord() {
  if (!options_.abort_on_hang) return;  // in report mode a follower has nothing to do
  const hd::IncidentRecord r = ReadRecord();
  if (r.stage != hd::IncidentStage::kHang) return;
  AbortCommunicators(hd::CommsToAbort(r, rt_->ring->GlobalRank()));
}

std::string Watchdog::VerdictName() {
  return hd::VerdictFileName(job_, shared_dir_);
}

void Watchdog::Report(const hd::Analysis& a, const char* stage) {
  std::string error;
  const std::string name = VerdictName();
  const std::string path = dir_ + "/" + name;
  if (!hd::WriteFileAtomically(dir_, name, hd::RenderJson(a) + "\n", &error)) {
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
  WriteStderr(SuspectLine(a, path, rank, pid));
}

void Watchdog::ReportResolved(const hd::IncidentRecord& r, const hd::Analysis* current) {
  const double lasted_s =
      static_cast<double>(std::max<int64_t>(0, r.resolved_wall_ns - r.onset_wall_ns)) * 1e-9;
  // The document this rank reported, else (a decider that took over) the job as it is now; either
  // way with the record's account of the incident.
  hd::Analysis a = reported_ ? last_reported_ : (current != nullptr ? *current : hd::Analysis{});
  hd::ApplyIncident(r, trace::RealtimeNs(), &a);
  std::string error;
  const std::string name = VerdictName();
  if (!hd::WriteFileAtomically(dir_, name, hd::RenderResolvedJson(a, lasted_s) + "\n", &error)) {
    WarnOnce(WarnKey::kWatchdog, "watchdog cannot write its verdict: %s", error.c_str());
    return;
  }
  WriteStderr(ResolvedLine(r, lasted_s, dir_ + "/" + name, rt_->ring->GlobalRank(),
                           static_cast<int>(getpid())));
}

void Watchdog::AbortCommunicators(const std::vector<uint64_t>& ids) {
  // The communicators the record names for this rank (CommsToAbort), and every one this rank
  // still has work in flight on. The rank is stalled behind a confirmed hang: work it issued on
  // another communicator behind the stuck one (a broadcast after an AllReduce that waits for a
  // dead peer) would hold its host thread in the next synchronize, short of its error handling,
  // and the record's view of what each rank waits in can miss it (a dead peer's last record,
  // never stamped complete, stands in front). As PyTorch's watchdog aborts its process group's
  // communicators on a timeout.
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
    // Before the abort: the completions it forces on this communicator's pending work are then
    // read as abandoned, by this process's stall rule and by every reader of the ring.
    aborted_here_ = true;
    rt_->ring->SetFlags(trace::kHeaderWatchdogAborted);
    watch_.MarkAborted(cs->id);
    trace::RecordData d = ProbeRecord(trace::OpType::kCommAbort, cs->id);
    d.flags = trace::kFlagByWatchdog;
    rt_->ring->Append(d, false);
    const ncclResult_t r = real_abort(static_cast<ncclComm_t>(handle));
    Warn("NCCLSCOPE_ON_HANG=abort: aborted communicator %s (%016llx) of rank %d: %s",
         cs->name.c_str(), static_cast<unsigned long long>(cs->id), me,
         r == ncclSuccess ? "ok" : "ncclCommAbort failed");
  });
}

}  // namespace ncclscope::plugin
