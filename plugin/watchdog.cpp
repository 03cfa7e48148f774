#include "plugin/watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "hang_detector/verdict_json.h"
#include "plugin/detached_thread.h"
#include "plugin/incident_report.h"
#include "plugin/runtime.h"
#include "plugin/warn.h"
#include "plugin/watchdog_decision.h"
#include "plugin/watchdog_stderr.h"
#include "trace/clock.h"
#include "trace/ring_layout.h"

namespace ncclscope::plugin {
namespace {

namespace hd = hang_detector;

// In-flight operations followed at once; beyond it new ones are not watched (counted).
constexpr size_t kMaxWatched = 16384;

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

Watchdog::Watchdog(Runtime* rt, const WatchdogOptions& options)
    : rt_(rt),
      options_(options),
      dir_(DirOf(rt->ring->path())),
      job_(rt->ring->header().job_id),
      job_key_(JobKey(job_)),
      rule_(options.stall),
      watch_(rt->ring.get(), &rule_, kMaxWatched),
      probe_(hd::MakeLinuxProcessProbe()) {}

void Watchdog::Tick(int64_t now_ns) noexcept {
  if (failed()) return;
  try {
    watch_.Scan();
    const StallState s = rule_.Check(now_ns);
    if (s.stalled) {
      if (!thread_started_ && !StartThread()) return;
      Post(true, s, now_ns);
      posted_stall_ = true;
    } else if (posted_stall_) {
      Post(false, s, now_ns);
      posted_stall_ = false;
    }
    if (rt_->numerics != nullptr) NoteNumerics(now_ns);
  } catch (...) {
    // Allocation failure or a bug: the host must not notice.
    WarnOnce(WarnKey::kWatchdog, "watchdog failed; hang detection disabled in this process");
    failed_ = true;
  }
}

void Watchdog::Post(bool stalled, const StallState& s, int64_t now_ns) {
  {
    std::lock_guard<std::mutex> lock(mailbox_mutex_);
    if (stalled) {
      mailbox_.stall = true;
      mailbox_.stall_state = s;
      mailbox_.stall_ns = now_ns;
      mailbox_.in_flight.count = watch_.InFlightComms(&mailbox_.in_flight.ids);
    } else {
      mailbox_.progress = true;
      mailbox_.progress_ns = now_ns;
      mailbox_.stall = false;
    }
  }
  mailbox_cv_.notify_one();
}

bool Watchdog::StartThread() {
  thread_started_ = true;
  const int rc = StartDetachedThread(ThreadMain, this, "ncclscope-wd");
  if (rc != 0) {
    WarnOnce(WarnKey::kWatchdog,
             "cannot start the watchdog's thread (error %d); hang detection disabled in this "
             "process",
             rc);
    failed_ = true;
    return false;
  }
  return true;
}

void* Watchdog::ThreadMain(void* self) {
  static_cast<Watchdog*>(self)->Work();
  return nullptr;
}

void Watchdog::Work() {
  while (!failed()) {
    Mailbox m;
    {
      std::unique_lock<std::mutex> lock(mailbox_mutex_);
      mailbox_cv_.wait(lock,
                       [this] { return mailbox_.progress || mailbox_.stall || mailbox_.numerics; });
      m = mailbox_;
      mailbox_ = {};
    }
    try {
      if (m.progress && stalled_) OnProgress(m.progress_ns);
      if (m.stall) {
        in_flight_ = m.in_flight;
        OnStall(m.stall_state, m.stall_ns);
      }
      if (m.numerics) LookAtNumerics();
    } catch (...) {
      // Allocation failure or a bug in the analysis: the host must not notice.
      WarnOnce(WarnKey::kWatchdog, "watchdog failed; hang detection disabled in this process");
      failed_ = true;
    }
  }
}

void Watchdog::OnStall(const StallState& s, int64_t now_ns) {
  if (!stalled_) {
    stalled_ = true;
    settled_ = false;
    reported_ = false;
    next_analysis_ns_ = now_ns;
    onset_ns_ = s.since_ns;
    onset_wall_ns_ = trace::RealtimeNs() - (now_ns - s.since_ns);
    rt_->ring->SetFlags(trace::kHeaderSuspect);
  }
  // In abort mode a settled rank keeps looking while it stays stalled: an abort returns the rank
  // to its next wait (another communicator's operation it had issued behind the stuck one), often
  // without a moment of progress between, so that wait belongs to this incident. The decider
  // correlates again and the others follow its newer decisions (a rank acts only on a decision
  // newer than its own wait); when the decider itself leaves (its abort ended its process), a
  // follower takes the node lock and decides.
  if (settled_ && !options_.abort_on_hang) return;
  if (!Decides()) {
    FollowDecision();
    return;
  }
  if (now_ns < next_analysis_ns_) return;
  const Outcome o = Correlate(s);
  settled_ = o == Outcome::kSettled;
  // A suspect is looked at again less often as it ages: it is confirmed by time only after tens of
  // seconds, and every look correlates the whole job (the cache spares only the reading). Death or
  // freezing of the culprit is still seen within a tenth of its age.
  const int64_t age = now_ns - onset_ns_;
  next_analysis_ns_ = now_ns + (o == Outcome::kSuspect ? std::max(options_.reanalyze_ns, age / 10)
                                                       : options_.reanalyze_ns);
}

void Watchdog::OnProgress(int64_t now_ns) {
  // Progress again: this incident is over (a later stall is a new one). What this rank reported
  // must not linger as if the job were still stuck.
  rt_->ring->ClearFlags(trace::kHeaderSuspect);
  stalled_ = false;
  // The next incident's decider may be another rank; what this one kept is stale.
  lock_.Release();
  cache_.Clear();
  passes_ = 0;
  last_decision_.clear();
  if (!reported_) return;
  reported_ = false;
  const double lasted_s = static_cast<double>(now_ns - onset_ns_) * 1e-9;
  std::string error;
  if (!WriteFileAtomically(dir_, kVerdictFile,
                           hd::RenderResolvedJson(last_reported_, lasted_s) + "\n", &error)) {
    WarnOnce(WarnKey::kWatchdog, "watchdog cannot write its verdict: %s", error.c_str());
    return;
  }
  const hd::Verdict& v = last_reported_.verdicts.front();
  char line[256];
  std::snprintf(line, sizeof line,
                "ncclscope: watchdog of rank %d (pid %d): resolved: %s %s #%llu progressed "
                "after %.1f s; %s/%s says so\n",
                rt_->ring->GlobalRank(), static_cast<int>(getpid()), v.comm_name.c_str(),
                v.op.c_str(), static_cast<unsigned long long>(v.seq), lasted_s, dir_.c_str(),
                kVerdictFile);
  WriteStderr(line);
}

std::unique_ptr<Watchdog> MakeWatchdog(Runtime* rt) noexcept {
  if (!rt->config.watchdog) return nullptr;
  try {
    WatchdogOptions o;
    o.stall.floor_ns = rt->config.stall_floor_ms * 1'000'000;
    o.stall.p99_factor = static_cast<double>(rt->config.stall_p99_factor);
    o.abort_on_hang = rt->config.on_hang == "abort";
    o.confirm_floor_s = static_cast<double>(rt->config.confirm_floor_ms) * 1e-3;
    o.confirm_factor = static_cast<double>(rt->config.confirm_factor);
    o.confirm_ceiling_s = static_cast<double>(rt->config.confirm_ceiling_ms) * 1e-3;
    o.heartbeat_s = static_cast<double>(rt->config.heartbeat_ms) * 1e-3;
    return std::make_unique<Watchdog>(rt, o);
  } catch (...) {
    WarnOnce(WarnKey::kWatchdog, "cannot start the watchdog; hang detection disabled");
    return nullptr;
  }
}

}  // namespace ncclscope::plugin
