// The in-process watchdog. Each tick of the probe's background thread (background_thread.cpp) feeds
// the stall rule from the ring (op_watch.h), which costs no thread of its own. On a local stall it
// hands the incident to a thread of its own, started at the first stall: that one marks the ring
// header suspect and correlates the job directory, which can take seconds (thousands of rings, a
// slow network filesystem) and must never hold up the heartbeat or the completion stamps of the
// background thread: a rank whose heartbeat stops reads as frozen to the others. A hang-class
// verdict is reported in two stages, each once per incident across all ranks
// (incident_report.h). Only one watchdog per node and job correlates: the stalled rank that holds
// the node lock (node_lock.h). It reads the directory through a cache that re-reads only what moved
// between its looks (ring_cache.h) and publishes its decision after each look
// (watchdog_decision.h); the other stalled ranks read that decision instead of correlating, and
// act on it only for a confirmed hang (abort mode), reporting nothing themselves. The holder
// reports: as a suspect (verdict.json with stage "suspect", one stderr line, nothing acted on),
// then, if the correlator confirms it, as a hang (stage "hang", the stderr block and, with
// NCCLSCOPE_ON_HANG=abort, ncclCommAbort of this rank's communicators the verdict names and of
// those it has work in flight on; a rank still stalled after that keeps following). When
// progress resumes, the rank that reported rewrites verdict.json with stage "resolved". Tick is
// called by the background thread only; the rest runs on the watchdog's thread. Never throws, never
// aborts the process.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "hang_detector/process_probe.h"
#include "hang_detector/verdict.h"
#include "plugin/node_lock.h"
#include "plugin/op_watch.h"
#include "plugin/ring_cache.h"
#include "plugin/stall_rule.h"

namespace ncclscope::plugin {

struct Runtime;

struct WatchdogOptions {
  StallParams stall;
  bool abort_on_hang = false;
  double heartbeat_s = 0.1;  // writers' heartbeat period, for the correlator's staleness
  int64_t reanalyze_ns = 2'000'000'000;  // while stalled without a hang verdict
  double confirm_floor_s = 60;           // stage two, as hang_detector::AnalyzeOptions
  double confirm_factor = 3;
  double confirm_ceiling_s = 600;
};

class Watchdog {
 public:
  // rt outlives the watchdog (the runtime is never destroyed). Allocates; call at init.
  Watchdog(Runtime* rt, const WatchdogOptions& options);

  // One pass at now_ns (the probe's clock). Cheap unless a stall needs correlating.
  void Tick(int64_t now_ns) noexcept;

  // NCCLSCOPE_NUMERICS: how soon the watchdog looks at the job after this rank wrote a numerics
  // record whose input held a NaN/Inf (the other ranks' records of that collective land within
  // it), and how often while records of clean samples keep coming (their hashes are compared).
  static constexpr int64_t kNumericsPoisonedLookNs = 1'000'000'000;
  static constexpr int64_t kNumericsLookPeriodNs = 10'000'000'000;
  // How long a numerics verdict waits for members whose record of that collective is not there
  // yet (a rank's record lands when its passes finish on its device) before it is reported
  // without them; they are looked for again every kNumericsPoisonedLookNs meanwhile.
  static constexpr int64_t kNumericsSettleNs = 5'000'000'000;

  const StallRule& rule() const { return rule_; }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  // Whether the last Tick found this rank stalled (a suspect). Background thread only.
  bool stall_posted() const noexcept { return posted_stall_; }

 private:
  // The communicators this rank has operations in flight on (from the ring, by the background
  // thread). Bounded: a rank stuck in more communicators at once than this is not credible.
  struct InFlightComms {
    std::array<uint64_t, 32> ids{};
    size_t count = 0;
  };
  enum class Outcome : uint8_t {
    kNothing,  // no hang-class verdict yet: look again later
    kSuspect,  // a suspect: look again later, it may be confirmed or go away
    kSettled,  // a confirmed hang (reported here or elsewhere), or the directory is unreadable
  };
  void OnStall(const StallState& s, int64_t now_ns);
  void OnProgress(int64_t now_ns);
  // Whether this rank decides for the node now; takes the node lock when it is free.
  bool Decides();
  Outcome Correlate(const StallState& s);
  void Publish(const hang_detector::Analysis& a, int64_t written_wall_ns);
  // A rank that does not decide: acts on the holder's decision (abort mode, confirmed hang).
  void FollowDecision();
  void Report(const hang_detector::Analysis& a, const char* stage);
  // NCCLSCOPE_NUMERICS (watchdog_numerics.cpp): the background thread's check of new numerics
  // records, and the watchdog thread's look that reports each numerics verdict once per incident.
  void NoteNumerics(int64_t now_ns);
  void LookAtNumerics();
  // Whether the numerics verdict `key` still waits for missing members (watchdog thread).
  bool Settling(uint64_t key);
  void AbortCommunicators(const std::vector<uint64_t>& ids);

  // What the background thread tells the watchdog's thread, newest first: progress, then the
  // latest stall seen after it (a progress clears an older stall: that incident is over).
  struct Mailbox {
    bool progress = false;
    int64_t progress_ns = 0;
    bool stall = false;
    StallState stall_state;
    int64_t stall_ns = 0;
    InFlightComms in_flight;  // with the stall: the communicators of this rank's waiting work
    bool numerics = false;    // new numerics records call for a look at the job
  };
  void Post(bool stalled, const StallState& s, int64_t now_ns);  // background thread
  bool StartThread();                                            // background thread
  static void* ThreadMain(void* self);
  void Work();  // the watchdog's thread

  Runtime* rt_;
  WatchdogOptions options_;
  std::string dir_;
  std::string job_;  // this rank's job id: the only job it correlates
  uint64_t job_key_ = 0;
  StallRule rule_;
  OpWatch watch_;
  std::unique_ptr<hang_detector::ProcessProbe> probe_;
  // Background thread only.
  bool thread_started_ = false;
  bool posted_stall_ = false;
  uint64_t numerics_seen_ = 0;           // numerics records written when last looked at
  uint64_t numerics_poisoned_seen_ = 0;  // of which poisoned
  int64_t numerics_next_look_ns_ = 0;    // 0: no look due
  int64_t numerics_last_look_ns_ = 0;
  std::mutex mailbox_mutex_;
  std::condition_variable mailbox_cv_;
  Mailbox mailbox_;                  // guarded by mailbox_mutex_
  std::atomic<bool> failed_{false};  // an internal failure turned the watchdog off
  // The watchdog's thread only, from here on.
  bool stalled_ = false;
  bool settled_ = false;     // this incident has its verdict (ours or another rank's)
  InFlightComms in_flight_;  // as of the latest stall posted
  int64_t next_analysis_ns_ = 0;
  int64_t onset_wall_ns_ = 0;
  int64_t onset_ns_ = 0;  // the probe's clock
  // What this rank wrote to verdict.json for the current incident, to mark it resolved.
  bool reported_ = false;
  hang_detector::Analysis last_reported_;
  // One decider per node: the lock, and what the decider keeps for its looks of one incident.
  NodeLock lock_;
  bool no_lock_ = false;  // the lock cannot be had (a read-only directory): every rank decides
  RingCache cache_;
  uint64_t passes_ = 0;        // correlations of this incident
  std::string last_decision_;  // the decision text a follower read last
  bool warned_decision_ = false;
  std::vector<uint64_t> numerics_reported_;  // incident keys of numerics verdicts reported here
  // Verdicts still waiting for members' records: incident key, when first seen (probe clock).
  std::vector<std::pair<uint64_t, int64_t>> numerics_settling_;
  std::atomic<bool> numerics_relook_{false};  // the watchdog thread asks the background thread
};

// Creates the runtime's watchdog when NCCLSCOPE_WATCHDOG is on; null otherwise or on failure (one
// warning). Call at init.
std::unique_ptr<Watchdog> MakeWatchdog(Runtime* rt) noexcept;

}  // namespace ncclscope::plugin
