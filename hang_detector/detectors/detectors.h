// Internal to the correlator: the shared context and one function per family of verdicts. Each
// detector reads the index and appends candidate verdicts; decision/correlator.cpp ranks and merges
// them (decision/steps.h: the steps around the detectors).
#pragma once

#include <string>
#include <vector>

#include "hang_detector/detectors/analyze_options.h"
#include "hang_detector/ingest/job_index.h"
#include "hang_detector/ingest/process_probe.h"
#include "hang_detector/verdicts/rank_list.h"
#include "hang_detector/verdicts/verdict.h"

namespace ncclscope::hang_detector {

enum class Liveness : uint8_t {
  kAlive,     // heartbeat fresh or process running
  kFinished,  // exited normally (header flag)
  kEnded,     // stopped with the rest of the job (post-mortem): nothing singular about it
  kDead,      // gone while the others went on
  kFrozen,    // exists but makes no progress
  // Its watchdog aborted its communicators on a confirmed hang (NCCLSCOPE_ON_HANG=abort): what it
  // does afterwards (its waits ending, its exit) is the abort's doing. Judged as it stood at the
  // abort, a waiting rank like any alive one: never a culprit for being gone.
  kAborted,
};

struct RankLiveness {
  Liveness state = Liveness::kAlive;
  ProcessState process = ProcessState::kUnknown;
  bool local = false;    // written on this host, so `process` was checked
  bool foreign = false;  // another host's ring file read directly (shared filesystem): its
                         // heartbeat arrives late, so only a long silence counts
  double silent_s = 0;   // heartbeat age relative to the reference time
};

struct Context {
  const JobIndex& index;
  const AnalyzeOptions& options;
  std::vector<RankLiveness> live;  // per file
  int64_t ref_wall = 0;            // "now", or the job's last heartbeat when it had ended
  bool post_mortem = false;

  // In double: a damaged file's times may be any int64, and their difference must not overflow.
  double SinceS(int64_t wall) const {
    return (static_cast<double>(ref_wall) - static_cast<double>(wall)) * 1e-9;
  }
  bool Stalled(uint32_t file, uint32_t pos) const;  // issued at least stall_s before ref
  int RankOf(uint32_t file) const;                  // global rank, or -1 - file when unknown
  int FileOf(int rank) const;                       // inverse of RankOf, -1 when no such file
  // The rank has an operation or blocking call that has waited at least stall_s, other than the
  // records `v` cites: it cannot issue anything new, so its absence is a symptom, not a cause.
  bool BlockedElsewhere(int rank, const Verdict& v) const;
  Evidence RecordEvidence(uint32_t file, uint32_t pos, const std::string& what) const;
  // When `wall` was, in words: "8.3 s ago", or "8.3 s before the job's last heartbeat" post mortem.
  std::string Ago(int64_t wall) const;
  std::string CommName(const CommModel& c) const;
};

// missing, desync and device-stall on collectives, and the waiting-on view.
// The operation `pos` of `file` waits behind on its own stream: the nearest earlier one still
// waiting, outside its group; -1 when none (it is at the head of its stream).
int64_t StreamBlocker(const JobIndex& index, uint32_t file, uint32_t pos);

void CheckCollectives(const Context& ctx, std::vector<Verdict>* out,
                      std::vector<WaitingOn>* waiting);
// Unmatched send/recv, p2p desync, and cycles in the wait-for graph.
void CheckP2P(const Context& ctx, std::vector<Verdict>* out);
// Ranks that never joined a communicator's creation.
void CheckInits(const Context& ctx, std::vector<Verdict>* out);
// Compute stragglers and slow links over the newest complete collectives (straggler_scores.h).
void CheckStragglers(const Context& ctx, std::vector<Verdict>* out);
// nan-origin and corrupt-output from the numerics records (numerics_checks.cpp), placed after the
// hang-class verdicts and before the stragglers. Run after ApplyLiveness and Merge: a numerics
// culprit is not a hang's, so it must neither hide a dead rank's own verdict nor merge with one.
void AddNumerics(const Context& ctx, std::vector<Verdict>* verdicts);

// Sorted, duplicate-free rank list helpers.
void SortUnique(std::vector<int>* ranks);
// "rank 3 waits", "ranks 0-2 wait", "nobody waits".
std::string RanksWait(const std::vector<int>& ranks);

}  // namespace ncclscope::hang_detector
