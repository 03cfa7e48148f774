// What the one watchdog of a node that correlates (the holder of the node lock, node_lock.h) tells
// the other ranks' watchdogs: the stage of the incident it sees and, for a confirmed hang, which
// communicators each rank must abort. Written atomically (write + rename, 0600) into the trace
// directory after every correlation; the other ranks read it on their ticks instead of correlating.
// A trivial line format parsed here without libraries (design rule 3), treated as hostile input:
// anything malformed is rejected whole, with a message, and nothing acts on it.
//
//   ncclscope-watchdog-decision 1
//   job <16 hex digits: JobKey of the job id>
//   holder <pid> <global rank, -1 when unknown>
//   written <wall-clock ns of the correlation>
//   onset <wall-clock ns at which the holder's stall began>
//   passes <correlations this holder ran in this incident>
//   stage none|suspect|hang
//   incident <16 hex digits: IncidentKey of the headline, 0 for none>
//   hang-comm <16 hex>            (zero or more: every member aborts it)
//   wait <16 hex> <rank>,<rank>   (zero or more: the listed global ranks wait in it)
//   end
//
// Pure functions; thread-safe. Never throw except std::bad_alloc.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hang_detector/verdict.h"

namespace ncclscope::plugin {

enum class DecisionStage : uint8_t { kNone, kSuspect, kHang };

struct DecisionWait {
  uint64_t comm_id = 0;
  std::vector<int> ranks;  // global ranks that issued the stuck operation and wait in it
  bool operator==(const DecisionWait&) const = default;
};

struct Decision {
  uint64_t job = 0;  // JobKey
  int holder_pid = 0;
  int holder_rank = -1;
  int64_t written_wall_ns = 0;
  int64_t onset_wall_ns = 0;
  uint64_t passes = 0;
  DecisionStage stage = DecisionStage::kNone;
  uint64_t incident = 0;
  std::vector<uint64_t> hang_comms;  // communicators of confirmed hang verdicts
  std::vector<DecisionWait> waits;   // where the waiting ranks wait
  bool operator==(const Decision&) const = default;
};

// Bounds of what a parser accepts (a decision of a 4096-rank node stays far below them).
inline constexpr size_t kMaxDecisionBytes = 1 << 20;
inline constexpr size_t kMaxDecisionEntries = 16384;  // hang-comm and wait lines together
inline constexpr int kMaxDecisionRank = 1 << 24;

// A key of the job id for file names and the decision: FNV-1a, 64 bits.
uint64_t JobKey(const std::string& job_id);

// The lock file and the decision file of one job in a trace directory.
std::string NodeLockPath(const std::string& dir, uint64_t job_key);
std::string DecisionName(uint64_t job_key);  // relative to the directory

// The decision an analysis leads to: stage from its headline, and for a confirmed hang the
// communicators of every confirmed hang verdict and every wait (as AbortCommunicators acted on
// them before one rank decided for the node). Holder, times and passes are the caller's.
Decision DecisionFromAnalysis(const hang_detector::Analysis& a);

std::string RenderDecision(const Decision& d);

// Parses a decision. Returns false and sets *error (what is wrong, with the line number) on any
// malformed, truncated, oversized or out-of-range input.
bool ParseDecision(std::string_view text, Decision* out, std::string* error);

// The communicators `rank` must abort under a decision: none unless the stage is a confirmed hang;
// then every hang-comm and each wait that lists the rank. Sorted, unique.
std::vector<uint64_t> CommsToAbort(const Decision& d, int rank);

// What a rank that does not correlate makes of the decision file's text.
enum class Follow : uint8_t {
  kWait,     // nothing to do now: not a confirmed hang, or looked at before this rank's wait began
  kAct,      // a confirmed hang that saw this rank's wait: abort *comms (abort mode), then settle
  kIgnored,  // malformed, or of another job (*error says which): nothing acts on it
};
// job: this rank's JobKey; onset_wall_ns: when this rank's wait began; rank: its global rank.
Follow FollowDecisionText(std::string_view text, uint64_t job, int64_t onset_wall_ns, int rank,
                          std::vector<uint64_t>* comms, std::string* error);

// Reads <path> (at most kMaxDecisionBytes + 1 bytes; no symlink followed). Returns 0 and fills
// *text, ENOENT when there is none, or another errno.
int ReadSmallFile(const std::string& path, std::string* text);

}  // namespace ncclscope::plugin
