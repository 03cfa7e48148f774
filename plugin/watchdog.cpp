#include "plugin/watchdog.h"

#include <unistd.h>

#include <algorithm>

#include "hang_detector/correlator.h"
#include "hang_detector/verdict_json.h"
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
  if (failed_) return;
  try {
    watch_.Scan();
    const StallState s = rule_.Check(now_ns);
    if (s.stalled) {
      OnStall(s, now_ns);
    } else if (stalled_) {
      // Progress again: this incident is over (a later stall is a new one).
      rt_->ring->ClearFlags(trace::kHeaderSuspect);
      stalled_ = false;
    }
  } catch (...) {
    // Allocation failure or a bug in the analysis: the host must not notice.
    WarnOnce(WarnKey::kWatchdog, "watchdog failed; hang detection disabled in this process");
    failed_ = true;
  }
}

void Watchdog::OnStall(const StallState& s, int64_t now_ns) {
  if (!stalled_) {
    stalled_ = true;
    settled_ = false;
    next_analysis_ns_ = now_ns;
    onset_wall_ns_ = trace::RealtimeNs() - (now_ns - s.since_ns);
    rt_->ring->SetFlags(trace::kHeaderSuspect);
  }
  if (settled_ || now_ns < next_analysis_ns_) return;
  settled_ = Correlate(s);
  next_analysis_ns_ = now_ns + options_.reanalyze_ns;
}

bool Watchdog::Correlate(const StallState& s) {
  trace::TraceSet set;
  std::string error;
  if (!trace::ReadTraceDir(dir_, &set, &error)) {
    WarnOnce(WarnKey::kWatchdog, "watchdog cannot read %s: %s", dir_.c_str(), error.c_str());
    return true;  // nothing to correlate: do not retry this incident
  }
  hd::AnalyzeOptions o;
  o.now_wall_ns = trace::RealtimeNs();
  o.probe = probe_.get();
  // The stall already lasted T: waits shorter than half of it are still progress to the
  // correlator, and a writer is only stale after many missed heartbeats.
  o.stall_s = std::min(2.0, static_cast<double>(s.threshold_ns) * 0.5e-9);
  o.stale_s = std::max(2.0, 20 * options_.heartbeat_s);
  const hd::Analysis a = hd::Analyze(set, o);
  if (!a.usable || a.verdicts.empty() || !hd::IsHang(a.verdicts.front().cls)) return false;
  const hd::Verdict& v = a.verdicts.front();
  if (ClaimIncident(dir_, v, onset_wall_ns_)) {
    const std::string path = dir_ + "/" + kVerdictFile;
    if (WriteFileAtomically(dir_, kVerdictFile, hd::RenderJson(a) + "\n", &error)) {
      WriteStderr(VerdictBlock(a, path, rt_->ring->GlobalRank(), static_cast<int>(getpid())));
    } else {
      WarnOnce(WarnKey::kWatchdog, "watchdog cannot write its verdict: %s", error.c_str());
    }
  }
  if (options_.abort_on_hang) AbortCommunicators(a);
  return true;
}

void Watchdog::AbortCommunicators(const hd::Analysis& a) {
  // The communicators the hang verdicts name, and every other one this rank is stuck in behind
  // the same fault (a rank waiting in two communicators for one missing peer must leave both, or
  // it never returns to its error handling).
  const int me = rt_->ring->GlobalRank();
  std::vector<uint64_t> ids;
  for (const hd::Verdict& v : a.verdicts) {
    if (hd::IsHang(v.cls) && v.comm_id != 0) ids.push_back(v.comm_id);
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
    o.heartbeat_s = static_cast<double>(rt->config.heartbeat_ms) * 1e-3;
    return std::make_unique<Watchdog>(rt, o);
  } catch (...) {
    WarnOnce(WarnKey::kWatchdog, "cannot start the watchdog; hang detection disabled");
    return nullptr;
  }
}

}  // namespace ncclscope::plugin
