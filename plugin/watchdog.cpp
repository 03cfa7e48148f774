#include "plugin/watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "hang_detector/correlator.h"
#include "hang_detector/verdict_json.h"
#include "hang_detector/verdict_text.h"
#include "plugin/detached_thread.h"
#include "plugin/incident_report.h"
#include "plugin/nccl_symbols.h"
#include "plugin/runtime.h"
#include "plugin/warn.h"
#include "trace/clock.h"
#include "trace/ring_layout.h"
#include "trace/trace_set.h"

namespace ncclscope::plugin {
namespace {

namespace hd = hang_detector;

// In-flight operations followed at once; beyond it new ones are not watched (counted).
constexpr size_t kMaxWatched = 16384;

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Our own single write(2), so the block is not interleaved with other threads' lines.
void WriteStderr(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (w <= 0) return;
    done += static_cast<size_t>(w);
  }
}

}  // namespace

Watchdog::Watchdog(Runtime* rt, const WatchdogOptions& options)
    : rt_(rt),
      options_(options),
      dir_(DirOf(rt->ring->path())),
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
      mailbox_cv_.wait(lock, [this] { return mailbox_.progress || mailbox_.stall; });
      m = mailbox_;
      mailbox_ = {};
    }
    try {
      if (m.progress && stalled_) OnProgress(m.progress_ns);
      if (m.stall) OnStall(m.stall_state, m.stall_ns);
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
  if (settled_ || now_ns < next_analysis_ns_) return;
  const Outcome o = Correlate(s);
  settled_ = o == Outcome::kSettled;
  // A suspect is looked at again less often as it ages: it is confirmed by time only after tens of
  // seconds, and every look reads the whole directory. Death or freezing of the culprit is still
  // seen within a tenth of its age.
  const int64_t age = now_ns - onset_ns_;
  next_analysis_ns_ = now_ns + (o == Outcome::kSuspect ? std::max(options_.reanalyze_ns, age / 10)
                                                       : options_.reanalyze_ns);
}

void Watchdog::OnProgress(int64_t now_ns) {
  // Progress again: this incident is over (a later stall is a new one). What this rank reported
  // must not linger as if the job were still stuck.
  rt_->ring->ClearFlags(trace::kHeaderSuspect);
  stalled_ = false;
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

Watchdog::Outcome Watchdog::Correlate(const StallState& s) {
  trace::TraceSet set;
  std::string error;
  if (!trace::ReadTraceDir(dir_, &set, &error)) {
    WarnOnce(WarnKey::kWatchdog, "watchdog cannot read %s: %s", dir_.c_str(), error.c_str());
    return Outcome::kSettled;  // nothing to correlate: do not retry this incident
  }
  // This rank's job only: another job's files in a shared NCCLSCOPE_DIR would read as dead ranks.
  set.job = rt_->ring->header().job_id;
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
  const hd::Analysis a = hd::Analyze(set, o);
  if (!a.usable || a.verdicts.empty() || !hd::IsHang(a.verdicts.front().cls)) {
    return Outcome::kNothing;
  }
  const hd::Verdict& v = a.verdicts.front();
  if (hd::IsSuspect(v)) {
    if (!reported_ && ClaimIncident(dir_, v, onset_wall_ns_, "suspect")) Report(a, "suspect");
    return Outcome::kSuspect;
  }
  if (ClaimIncident(dir_, v, onset_wall_ns_, "hang")) Report(a, "hang");
  if (options_.abort_on_hang) AbortCommunicators(a);
  return Outcome::kSettled;
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

void Watchdog::AbortCommunicators(const hd::Analysis& a) {
  // The communicators the hang verdicts name, and every other one this rank is stuck in behind
  // the same fault (a rank waiting in two communicators for one missing peer must leave both, or
  // it never returns to its error handling).
  const int me = rt_->ring->GlobalRank();
  std::vector<uint64_t> ids;
  for (const hd::Verdict& v : a.verdicts) {
    if (hd::IsConfirmedHang(v) && v.comm_id != 0) ids.push_back(v.comm_id);
  }
  for (const hd::WaitingOn& w : a.waiting) {
    if (std::find(w.issued.begin(), w.issued.end(), me) != w.issued.end()) {
      ids.push_back(w.comm_id);
    }
  }
  auto real_abort = NCCLSCOPE_REAL(CommAbort);
  if (real_abort == nullptr) return;
  rt_->comms.ForEach([&](void* handle, CommState* cs) {
    if (std::find(ids.begin(), ids.end(), cs->id) == ids.end()) return;
    if (cs->aborted_by_watchdog.exchange(true)) return;
    const ncclResult_t r = real_abort(static_cast<ncclComm_t>(handle));
    Warn("NCCLSCOPE_ON_HANG=abort: aborted communicator %s (%016llx) of rank %d: %s",
         cs->name.c_str(), static_cast<unsigned long long>(cs->id), me,
         r == ncclSuccess ? "ok" : "ncclCommAbort failed");
  });
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
