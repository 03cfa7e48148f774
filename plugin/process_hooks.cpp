// Fork and exit handling: a forked child must never write the parent's ring mapping (it is shared
// with the parent), and a normal exit marks the ring finished.
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstdlib>

#include "plugin/accel/accel_stall_report.h"
#include "plugin/core/probe_clock.h"
#include "plugin/core/thread_state.h"
#include "plugin/core/warn.h"
#include "plugin/numerics/numerics_probe.h"
#include "plugin/runtime/runtime.h"
#include "trace/ring_layout.h"

namespace ncclscope::plugin {
namespace {

// Forked children that stopped recording because NCCLSCOPE_FORK=off (visible in a debugger/core).
std::atomic<uint64_t> g_children_not_recorded{0};

void BeforeFork() {
  InitMutex().lock();
}

void AfterForkInParent() {
  InitMutex().unlock();
}

void AfterForkInChild() {
  InitMutex().unlock();
  ResetThreadStateAfterFork();
  ResetProbeClockAfterFork();
  ResetWarnOnceAfterFork();
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (rt == nullptr || rt == kRuntimeOff) return;
  // The parent's runtime (ring mapping, poller that does not exist here) is left untouched.
  if (rt->config.fork == "off") {
    g_children_not_recorded.fetch_add(1, std::memory_order_relaxed);
    g_runtime.store(kRuntimeOff, std::memory_order_release);
  } else {
    g_runtime.store(nullptr, std::memory_order_release);
  }
}

// Work that completed since the poller's last pass (typically the final step's, synchronized just
// before exit) would otherwise stay "pending" in the trace. The poller is asked to stop, and once
// it has left its loop one last pass runs here; the wait is bounded so exit is never held up.
void StampLastCompletions(Runtime* rt) {
  if (rt->tracker == nullptr || !rt->poller_started.load(std::memory_order_acquire)) return;
  constexpr int kWaitSteps = 100;  // 100 x 200 us = 20 ms at most
  for (int i = 0; i < kWaitSteps && !rt->poller_exited.load(std::memory_order_acquire); ++i) {
    timespec ts{0, 200'000};
    nanosleep(&ts, nullptr);
  }
  if (rt->poller_exited.load(std::memory_order_acquire)) {
    rt->tracker->PollOnce(ProbeNowNs());
  }
}

void AtExit() {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (rt == nullptr || rt == kRuntimeOff) return;
  rt->stop.store(true, std::memory_order_release);
  StampLastCompletions(rt);
  // The last sampled collectives' numerics, once the background thread has left its loop (only
  // one thread may poll them).
  if (rt->numerics != nullptr && rt->poller_exited.load(std::memory_order_acquire)) {
    rt->numerics->Poll(ProbeNowNs());
  }
  // A kernel of ours that gave up waiting just before the exit (its rank then saw a wrong result
  // and stopped) is still told and recorded.
  if (rt->config.accel) PollAccelStalls(*rt->ring, ProbeNowNs());
  rt->ring->Heartbeat(ProbeNowNs());
  rt->ring->SetFlags(trace::kHeaderFinished);
  const uint64_t unknown = rt->ring->header().unknown_comm_records.load(std::memory_order_relaxed);
  if (unknown != 0) {
    Warn(
        "%llu calls on communicators created before ncclscope was loaded were recorded with "
        "communicator id 0",
        static_cast<unsigned long long>(unknown));
  }
}

}  // namespace

void InstallProcessHooks() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  pthread_atfork(BeforeFork, AfterForkInParent, AfterForkInChild);
  std::atexit(AtExit);
}

}  // namespace ncclscope::plugin
