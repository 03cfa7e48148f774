// The in-process watchdog: runs on the probe's one background thread (background_thread.cpp), so
// it costs no thread of its own. Each tick it feeds the stall rule from the ring (op_watch.h); on a
// local stall it marks the ring header suspect, correlates the job directory, and reports a hang
// verdict once per incident across all ranks (incident_report.h); with NCCLSCOPE_ON_HANG=abort it
// then aborts this rank's communicators named by the verdict. Not thread-safe: the background
// thread owns it. Never throws, never aborts the process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "hang_detector/process_probe.h"
#include "hang_detector/verdict.h"
#include "plugin/op_watch.h"
#include "plugin/stall_rule.h"

namespace ncclscope::plugin {

struct Runtime;

struct WatchdogOptions {
  StallParams stall;
  bool abort_on_hang = false;
  double heartbeat_s = 0.1;  // writers' heartbeat period, for the correlator's staleness
  int64_t reanalyze_ns = 2'000'000'000;  // while stalled without a hang verdict
};

class Watchdog {
 public:
  // rt outlives the watchdog (the runtime is never destroyed). Allocates; call at init.
  Watchdog(Runtime* rt, const WatchdogOptions& options);

  // One pass at now_ns (the probe's clock). Cheap unless a stall needs correlating.
  void Tick(int64_t now_ns) noexcept;

  const StallRule& rule() const { return rule_; }
  bool failed() const { return failed_; }

 private:
  void OnStall(const StallState& s, int64_t now_ns);
  // Correlates; true when this incident is settled: a hang verdict was reached (reported here or
  // by another rank), or the directory cannot be read.
  bool Correlate(const StallState& s);
  void AbortCommunicators(const hang_detector::Analysis& a);

  Runtime* rt_;
  WatchdogOptions options_;
  std::string dir_;
  StallRule rule_;
  OpWatch watch_;
  std::unique_ptr<hang_detector::ProcessProbe> probe_;
  bool stalled_ = false;
  bool failed_ = false;   // an internal failure turned the watchdog off
  bool settled_ = false;  // this incident has its verdict (ours or another rank's)
  int64_t next_analysis_ns_ = 0;
  int64_t onset_wall_ns_ = 0;
};

// Creates the runtime's watchdog when NCCLSCOPE_WATCHDOG is on; null otherwise or on failure (one
// warning). Call at init.
std::unique_ptr<Watchdog> MakeWatchdog(Runtime* rt) noexcept;

}  // namespace ncclscope::plugin
