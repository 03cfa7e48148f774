#include "plugin/watchdog/watchdog.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "hang_detector/incident/incident_files.h"
#include "hang_detector/incident/incident_key.h"
#include "hang_detector/incident/incident_lifecycle.h"
#include "plugin/core/detached_thread.h"
#include "plugin/core/warn.h"
#include "plugin/runtime/runtime.h"
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
      restart_(rt->ring->header().restart),
      job_key_(hd::JobKey(job_, restart_)),
      run_start_wall_ns_(rt->ring->header().start_realtime_ns),
      record_path_(dir_ + "/" + hd::IncidentRecordName(job_key_)),
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
    if (options_.abort_on_hang && RecordChanged(now_ns)) {
      if (!thread_started_ && !StartThread()) return;
      {
        std::lock_guard<std::mutex> lock(mailbox_mutex_);
        mailbox_.record = true;
        mailbox_.in_flight.count = watch_.InFlightComms(&mailbox_.in_flight.ids);
      }
      mailbox_cv_.notify_one();
    }
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

bool Watchdog::RecordChanged(int64_t now_ns) {
  // Only a rank with work in flight can be stuck behind a confirmed hang; one stat(2) a period.
  if (now_ns < next_record_poll_ns_ || watch_.watched() == 0) return false;
  next_record_poll_ns_ = now_ns + options_.record_poll_ns;
  struct stat st {};
  FileStamp now;
  if (stat(record_path_.c_str(), &st) == 0) {
    now.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    now.ino = st.st_ino;
    now.size = st.st_size;
  }
  if (now == record_stamp_) return false;
  record_stamp_ = now;
  return now.size >= 0;
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
      mailbox_cv_.wait(lock, [this] {
        return mailbox_.progress || mailbox_.stall || mailbox_.numerics || mailbox_.record;
      });
      m = mailbox_;
      mailbox_ = {};
    }
    try {
      if (m.progress && stalled_) OnProgress(m.progress_ns);
      if (m.stall || m.record) in_flight_ = m.in_flight;
      if (m.stall) OnStall(m.stall_state, m.stall_ns);
      // A confirmed hang recorded by the node's decider: follow it now, stalled or not yet.
      if (m.record && !lock_.held()) FollowRecord();
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
    next_analysis_ns_ = now_ns;
    onset_ns_ = s.since_ns;
    rt_->ring->SetFlags(trace::kHeaderSuspect);
    // An abort this process made belongs to a confirmed hang; only a new incident clears it.
    if (aborted_here_ && ReadRecord().stage != hd::IncidentStage::kHang) aborted_here_ = false;
  }
  // A rank stays stalled across an abort in abort mode: the abort returns it to its next wait
  // (another communicator's operation it had issued behind the stuck one), often without a moment
  // of progress between, so that wait belongs to this incident: the decider looks again and the
  // others follow the record. When the decider itself leaves (its abort ended its process), a
  // follower takes the node lock and carries the recorded incident on.
  if (!Decides()) {
    FollowRecord();
    return;
  }
  if (now_ns < next_analysis_ns_) return;
  next_analysis_ns_ = Look(s, now_ns);
}

void Watchdog::OnProgress(int64_t now_ns) {
  // Progress again: this rank's incident is over (a later stall is a new one), unless the
  // progress was an abort's doing.
  rt_->ring->ClearFlags(trace::kHeaderSuspect);
  stalled_ = false;
  if (lock_.held() || no_lock_) {
    const hd::IncidentRecord prev = ReadRecord();
    const hd::IncidentStep step = hd::OnLocalProgress(prev, aborted_here_, trace::RealtimeNs());
    if (step.event == hd::IncidentEvent::kResolved) {
      hd::IncidentRecord next = step.next;
      WriteRecord(&next);
      ReportResolved(next, nullptr);
    }
  }
  // The next incident's decider may be another rank; what this one kept is stale.
  lock_.Release();
  cache_.Clear();
  reported_ = false;
  last_record_text_.clear();
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
