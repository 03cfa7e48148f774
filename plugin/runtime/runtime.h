// The probe's per-process state, created lazily at the first recorded NCCL call and never destroyed
// (a detached poller thread and concurrent callers may use it until the process is gone).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "plugin/core/config.h"
#include "plugin/runtime/comm_map.h"
#include "plugin/runtime/completion_tracker.h"
#include "trace/ring_writer.h"

namespace ncclscope::plugin {

// Declared only: the numerics probe and the watchdog are made from a runtime and read it, so their
// headers sit above this one; runtime.cpp, which makes them, and their users include them.
class NumericsProbe;
class Watchdog;

struct Runtime {
  Config config;
  std::unique_ptr<trace::RingWriter> ring;
  CommMap comms;
  std::unique_ptr<CompletionTracker> tracker;  // null when completion tracking is off
  std::unique_ptr<Watchdog> watchdog;          // null when off; used by the background thread only
  std::unique_ptr<NumericsProbe> numerics;     // null when NCCLSCOPE_NUMERICS is off
  uint64_t process_nonce = 0;                  // distinguishes InitAll communicators of processes
  std::atomic<uint32_t> root_comms{0};         // for default names "comm<N>"
  std::atomic<uint32_t> init_all_calls{0};
  std::atomic<bool> stop{false};  // tells the background thread to finish
  std::atomic<bool> poller_started{false};
  std::atomic<bool> poller_exited{false};  // the thread left its loop: PollOnce is free to call
  int64_t first_heartbeat_ns = 0;          // written before the background thread starts
  // Created by the profiler plugin's init, not by an interposed call: the profiler's events are
  // the records (plugin_only_recorder.h). Set before the runtime is published, never changed.
  bool created_by_profiler = false;
  // A profiler-v4 context is attached to an interposed communicator: interposed calls log their
  // arguments so that events launched outside the call find their number (v4_call_log.h).
  std::atomic<bool> v4_profiler{false};
};

// nullptr: not initialized yet; kRuntimeOff: recording is off for good (in this process).
inline Runtime* const kRuntimeOff = reinterpret_cast<Runtime*>(uintptr_t{1});
extern std::atomic<Runtime*> g_runtime;

// Reads the configuration and creates the ring, tracker and background thread, once. Returns null
// when recording is off (disabled, or a failure printed its one warning). Thread-safe (locks);
// keeps errno. Must not be called from inside our own code (the caller holds the re-entrancy
// guard).
Runtime* InitRuntimeSlow() noexcept;

// InitRuntimeSlow for the profiler plugin's init when no interposed call has created the runtime
// (NCCL_PROFILER_PLUGIN without LD_PRELOAD, plugin_only_recorder.h). A runtime it creates has
// created_by_profiler set; one an interposed call of another thread created first is returned as
// it is. It never looks for NCCL's symbols: with a statically linked NCCL that search would
// dlopen a second libnccl.so.2 into the process. Thread-safe (locks); keeps errno.
Runtime* InitRuntimeFromProfiler() noexcept;

// Starts the detached background thread (completion polling, heartbeat, watchdog). Returns false
// with one warning when it cannot. Call once per runtime.
bool StartBackgroundThread(Runtime* rt) noexcept;

// Registers the fork and exit handlers, once per process. Thread-safe.
void InstallProcessHooks();

// The init lock, taken by the fork handlers so a child never inherits it locked.
std::mutex& InitMutex();

}  // namespace ncclscope::plugin
