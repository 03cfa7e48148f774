// The in-process watchdog. Each tick of the probe's background thread (background_thread.cpp) feeds
// the stall rule from the ring (op_watch.h), which costs no thread of its own. On a local stall it
// hands the incident to a thread of its own, started at the first stall: that one marks the ring
// header suspect and correlates the job directory, which can take seconds (thousands of rings, a
// slow network filesystem) and must never hold up the heartbeat or the completion stamps of the
// background thread: a rank whose heartbeat stops reads as frozen to the others.
//
// One watchdog per node and job decides: the stalled rank that holds the node lock (node_lock.h).
// It reads the directory through a cache that re-reads only what moved between its looks
// (ring_cache.h), and carries the job's incident through its stages with the lifecycle every
// reader shares (hang_detector/incident/): after each look it writes the job's incident record,
// and it reports each stage once, when the record changes stage: a suspect (the job's verdict
// file with stage "suspect", one stderr line, nothing acted on), a confirmed hang (stage "hang",
// the stderr block and, with NCCLSCOPE_ON_HANG=abort, ncclCommAbort of this rank's communicators
// the record names and of those it has work in flight on), and the end of the incident (stage
// "resolved"). A decider that takes over (the previous one's process ended) carries the recorded
// incident on: a confirmed hang is never judged again.
//
// The other ranks read the record. In abort mode every rank with work in flight looks at it every
// kRecordPollNs from the background thread (one stat(2)), so all of a node's waiting ranks abort
// within a second of the confirmation, not each at its own stall. Tick is called by the background
// thread only; the rest runs on the watchdog's thread. Never throws, never aborts the process.
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

#include "hang_detector/incident/incident_record.h"
#include "hang_detector/ingest/process_probe.h"
#include "hang_detector/verdicts/verdict.h"
#include "plugin/watchdog/node_lock.h"
#include "plugin/watchdog/op_watch.h"
#include "plugin/watchdog/ring_cache.h"
#include "plugin/watchdog/stall_rule.h"

namespace ncclscope::plugin {

struct Runtime;

struct WatchdogOptions {
  StallParams stall;
  bool abort_on_hang = false;
  double heartbeat_s = 0.1;  // writers' heartbeat period, for the correlator's staleness
  int64_t reanalyze_ns = 2'000'000'000;  // while stalled without a hang verdict
  int64_t record_poll_ns = 250'000'000;  // abort mode: how often a waiting rank looks at the record
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
  void OnStall(const StallState& s, int64_t now_ns);
  void OnProgress(int64_t now_ns);
  // Whether this rank decides for the node now; takes the node lock when it is free.
  bool Decides();
  // The decider's look: correlate, carry the incident on, write the record, report a new stage,
  // abort on a confirmed hang. Returns when to look again (the probe's clock).
  int64_t Look(const StallState& s, int64_t now_ns);
  // The job's incident record of this run, or a record of no incident with this job's identity.
  hang_detector::IncidentRecord ReadRecord();
  void WriteRecord(hang_detector::IncidentRecord* r);
  // A rank that does not decide: aborts what a confirmed hang in the record asks of it (abort
  // mode), plus every communicator it has work in flight on.
  void FollowRecord();
  // The job's verdict file: the analysis, or the resolved document; and the stderr report.
  void Report(const hang_detector::Analysis& a, const char* stage);
  // current: the look that found the job going on, if one did.
  void ReportResolved(const hang_detector::IncidentRecord& r,
                      const hang_detector::Analysis* current);
  std::string VerdictName();
  // NCCLSCOPE_NUMERICS (watchdog_numerics.cpp): the background thread's check of new numerics
  // records, and the watchdog thread's look that reports each numerics verdict once per incident.
  void NoteNumerics(int64_t now_ns);
  void LookAtNumerics();
  // Whether the numerics verdict `key` still waits for missing members (watchdog thread).
  bool Settling(uint64_t key);
  // Background thread, abort mode: whether the record changed since the last poll.
  bool RecordChanged(int64_t now_ns);
  void AbortCommunicators(const std::vector<uint64_t>& ids);

  // What the background thread tells the watchdog's thread, newest first: progress, then the
  // latest stall seen after it (a progress clears an older stall: that incident is over).
  struct Mailbox {
    bool progress = false;
    int64_t progress_ns = 0;
    bool stall = false;
    StallState stall_state;
    int64_t stall_ns = 0;
    InFlightComms in_flight;  // with a stall or a record: the communicators of waiting work
    bool numerics = false;    // new numerics records call for a look at the job
    bool record = false;      // abort mode: the job's incident record changed
  };
  void Post(bool stalled, const StallState& s, int64_t now_ns);  // background thread
  bool StartThread();                                            // background thread
  static void* ThreadMain(void* self);
  void Work();  // the watchdog's thread

  Runtime* rt_;
  WatchdogOptions options_;
  std::string dir_;
  std::string job_;  // this rank's job id: the only job it correlates
  uint32_t restart_ = 0;
  uint64_t job_key_ = 0;           // hang_detector::JobKey(job_, restart_)
  int64_t run_start_wall_ns_ = 0;  // this process's start: older records are an earlier run's
  std::string record_path_;
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
  int64_t next_record_poll_ns_ = 0;
  struct FileStamp {
    int64_t mtime_ns = 0;
    uint64_t ino = 0;
    int64_t size = -1;
    bool operator==(const FileStamp&) const = default;
  } record_stamp_;
  std::mutex mailbox_mutex_;
  std::condition_variable mailbox_cv_;
  Mailbox mailbox_;                  // guarded by mailbox_mutex_
  std::atomic<bool> failed_{false};  // an internal failure turned the watchdog off
  // The watchdog's thread only, from here on.
  bool stalled_ = false;
  InFlightComms in_flight_;  // as of the latest stall or record change posted
  int64_t next_analysis_ns_ = 0;
  int64_t onset_ns_ = 0;  // the probe's clock
  // This process aborted a communicator in the current incident: its waits that ended then were
  // ended by the abort, and are no progress.
  bool aborted_here_ = false;
  // What this rank wrote to the job's verdict file for the current incident, for its resolved form.
  bool reported_ = false;
  hang_detector::Analysis last_reported_;
  bool shared_dir_ = false;  // ring files of other jobs seen: the verdict file is named by the job
  // One decider per node: the lock, and what the decider keeps for its looks of one incident.
  NodeLock lock_;
  bool no_lock_ = false;  // the lock cannot be had (a read-only directory): every rank decides
  RingCache cache_;
  std::string last_record_text_;  // the record a follower acted on last
  bool warned_record_ = false;
  std::vector<uint64_t> numerics_reported_;  // incident keys of numerics verdicts reported here
  // Verdicts still waiting for members' records: incident key, when first seen (probe clock).
  std::vector<std::pair<uint64_t, int64_t>> numerics_settling_;
  std::atomic<bool> numerics_relook_{false};  // the watchdog thread asks the background thread
};

// Creates the runtime's watchdog when NCCLSCOPE_WATCHDOG is on; null otherwise or on failure (one
// warning). Call at init.
std::unique_ptr<Watchdog> MakeWatchdog(Runtime* rt) noexcept;

}  // namespace ncclscope::plugin
