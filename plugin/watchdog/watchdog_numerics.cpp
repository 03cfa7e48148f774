// The watchdog's side of NCCLSCOPE_NUMERICS: numerics verdicts (nan-origin, corrupt-output) are
// no hangs, so nothing stalls to set the watchdog off; new numerics records do. One rank per node
// looks (local rank 0, or every rank when local ranks are unknown), soon after a record of a
// poisoned input and at most every kNumericsLookPeriodNs otherwise, and each numerics verdict is
// reported once per incident across the node's ranks (a claim file, as for hangs): one stderr
// block, and verdict.json unless this rank reports a hang there.
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "hang_detector/decision/correlator.h"
#include "hang_detector/incident/incident_files.h"
#include "hang_detector/incident/incident_key.h"
#include "hang_detector/verdicts/verdict_json.h"
#include "plugin/core/probe_clock.h"
#include "plugin/core/warn.h"
#include "plugin/numerics/numerics_probe.h"
#include "plugin/runtime/runtime.h"
#include "plugin/watchdog/incident_report.h"
#include "plugin/watchdog/watchdog.h"
#include "plugin/watchdog/watchdog_stderr.h"
#include "trace/clock.h"

namespace ncclscope::plugin {

namespace hd = hang_detector;

void Watchdog::NoteNumerics(int64_t now_ns) {
  const int local_rank = rt_->ring->header().local_rank;
  if (local_rank > 0) return;  // local rank 0 looks for the node
  const uint64_t written = rt_->numerics->written();
  const uint64_t poisoned = rt_->numerics->poisoned();
  if (numerics_relook_.exchange(false, std::memory_order_relaxed)) {
    const int64_t due = now_ns + kNumericsPoisonedLookNs;
    if (numerics_next_look_ns_ == 0 || due < numerics_next_look_ns_) numerics_next_look_ns_ = due;
  }
  if (written != numerics_seen_) {
    // A poisoned input brings a look planned for later forward.
    const int64_t due = poisoned != numerics_poisoned_seen_
                            ? now_ns + kNumericsPoisonedLookNs
                            : std::max(now_ns, numerics_last_look_ns_ + kNumericsLookPeriodNs);
    if (numerics_next_look_ns_ == 0 || due < numerics_next_look_ns_) numerics_next_look_ns_ = due;
  }
  if (numerics_next_look_ns_ == 0 || now_ns < numerics_next_look_ns_) return;
  numerics_seen_ = written;
  numerics_poisoned_seen_ = poisoned;
  numerics_last_look_ns_ = now_ns;
  numerics_next_look_ns_ = 0;
  if (!thread_started_ && !StartThread()) return;
  {
    std::lock_guard<std::mutex> lock(mailbox_mutex_);
    mailbox_.numerics = true;
  }
  mailbox_cv_.notify_one();
}

bool Watchdog::Settling(uint64_t key) {
  const int64_t now = ProbeNowNs();
  for (const auto& [k, since] : numerics_settling_) {
    if (k == key) return now - since < kNumericsSettleNs;
  }
  numerics_settling_.emplace_back(key, now);
  return true;
}

void Watchdog::LookAtNumerics() {
  std::vector<std::string> notes;
  std::string error;
  const std::optional<hd::JobIndex> index = cache_.Index(dir_, job_, &notes, &error);
  if (!index) return;  // the stall path warns about an unreadable directory
  hd::AnalyzeOptions o;
  o.now_wall_ns = trace::RealtimeNs();
  o.probe = probe_.get();
  o.stale_s = std::max(10.0, 20 * options_.heartbeat_s);
  o.confirm_floor_s = options_.confirm_floor_s;
  o.confirm_factor = options_.confirm_factor;
  o.confirm_ceiling_s = options_.confirm_ceiling_s;
  hd::Analysis a = hd::Analyze(*index, o);
  if (!a.usable) return;
  a.input.notes.insert(a.input.notes.end(), notes.begin(), notes.end());
  const int rank = rt_->ring->GlobalRank();
  const int pid = static_cast<int>(getpid());
  for (const hd::Verdict& v : a.verdicts) {
    if (!hd::IsNumerics(v.cls)) continue;
    const uint64_t key = hd::IncidentKey(v);
    if (std::find(numerics_reported_.begin(), numerics_reported_.end(), key) !=
        numerics_reported_.end()) {
      continue;
    }
    if (v.unseen_count > 0 && Settling(key)) {
      numerics_relook_.store(true, std::memory_order_relaxed);
      continue;
    }
    numerics_reported_.push_back(key);
    // Another rank's watchdog (a node without local ranks, a restarted decider) may have told it.
    if (!hd::ClaimIncidentStage(dir_, job_key_, key, "numerics")) continue;
    shared_dir_ = shared_dir_ || cache_.saw_other_jobs();
    const std::string name = VerdictName();
    std::string path = dir_ + "/" + name;
    // A hang this rank reported stays in the verdict file: it is what must be acted on.
    if (reported_) {
      path = "nowhere (" + path + " holds this rank's hang report; ncclscope analyze " + dir_ +
             " shows both)";
    } else if (!hd::WriteFileAtomically(dir_, name, hd::RenderJson(a) + "\n", &error)) {
      WarnOnce(WarnKey::kWatchdog, "watchdog cannot write its verdict: %s", error.c_str());
    }
    hd::Analysis one = a;
    one.verdicts = {v};
    WriteStderr(VerdictBlock(one, path, rank, pid));
  }
}

}  // namespace ncclscope::plugin
