// The background thread: polls completion events, writes the heartbeat and ticks the watchdog's
// stall rule (at the heartbeat's period: its thresholds are seconds). The watchdog's slow work,
// correlating the trace directory, runs on its own thread (watchdog.h), so nothing here waits on
// a file system. It is detached and holds no lock, so it neither keeps the process alive nor
// blocks exit or fork.
#include <time.h>

#include <algorithm>

#include "plugin/accel/accel_stall_report.h"
#include "plugin/core/detached_thread.h"
#include "plugin/core/probe_clock.h"
#include "plugin/core/warn.h"
#include "plugin/cupti/cupti_probe.h"
#include "plugin/numerics/numerics_probe.h"
#include "plugin/profiler/profiler_plugin.h"
#include "plugin/profiler/proxy_mask.h"
#include "plugin/profiler/proxy_progress.h"
#include "plugin/runtime/runtime.h"
#include "plugin/watchdog/watchdog.h"

namespace ncclscope::plugin {
namespace {

// After this long without outstanding events the poll interval backs off to kIdleSleepNs, so an
// idle process does not wake thousands of times a second. The first completion after an idle
// period is then stamped up to kIdleSleepNs late.
constexpr int64_t kIdleAfterNs = 100'000'000;
constexpr int64_t kIdleSleepNs = 2'000'000;

void SleepNs(int64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  nanosleep(&ts, nullptr);
}

// The profiler's proxy detail follows the watchdog's suspicion (proxy_mask.h), and its in-flight
// progress is published at the heartbeat's period (proxy_progress.h).
void PublishProfilerProgress(Runtime* rt, int64_t now) {
  if (!profiler::AnyContext()) return;
  profiler::SetProxyDetail(rt->watchdog != nullptr && rt->watchdog->stall_posted(), *rt->ring);
  profiler::PublishProgress(*rt->ring, now);
}

void* Loop(void* arg) {
  auto* rt = static_cast<Runtime*>(arg);
  const int64_t poll_ns = rt->config.completion_poll_us * 1000;
  const int64_t heartbeat_ns = rt->config.heartbeat_ms * 1'000'000;
  // StartBackgroundThread wrote the first heartbeat: the first tick is one period later, so a
  // process's in-flight proxy progress is never published at a moment that races its start.
  int64_t last_heartbeat = rt->first_heartbeat_ns;
  int64_t last_busy = ProbeNowNs();
  while (!rt->stop.load(std::memory_order_acquire)) {
    RefreshProbeClock();
    const int64_t now = ProbeNowNs();
    const size_t outstanding = rt->tracker != nullptr ? rt->tracker->PollOnce(now) : 0;
    if (rt->numerics != nullptr) rt->numerics->Poll(now);
    if (now - last_heartbeat >= heartbeat_ns) {
      rt->ring->Heartbeat(now);
      last_heartbeat = now;
      if (rt->watchdog != nullptr) rt->watchdog->Tick(now);
      PublishProfilerProgress(rt, now);
      if (!rt->config.cupti.empty()) PollCupti(rt);
      if (rt->config.accel) PollAccelStalls(*rt->ring, now);
    }
    if (outstanding != 0) last_busy = now;
    int64_t sleep_ns = poll_ns;
    if (rt->tracker == nullptr) {
      sleep_ns = heartbeat_ns;
    } else if (now - last_busy > kIdleAfterNs) {
      sleep_ns = std::max(poll_ns, std::min(kIdleSleepNs, heartbeat_ns));
    }
    SleepNs(sleep_ns);
  }
  rt->poller_exited.store(true, std::memory_order_release);
  return nullptr;
}

}  // namespace

bool StartBackgroundThread(Runtime* rt) noexcept {
  rt->first_heartbeat_ns = ProbeNowNs();
  rt->ring->Heartbeat(rt->first_heartbeat_ns);
  const int rc = StartDetachedThread(Loop, rt, "ncclscope");
  if (rc != 0) {
    WarnOnce(WarnKey::kPoller,
             "cannot start the background thread (error %d); device completion "
             "tracking and heartbeat disabled",
             rc);
    return false;
  }
  rt->poller_started.store(true, std::memory_order_release);
  return true;
}

}  // namespace ncclscope::plugin
