// The job's incident as one fact: the record a node's deciding watchdog (the holder of the node
// lock) keeps in the trace directory, `.incident-<job key>` (incident_files.h). It says the stage
// of the job's current incident (suspect, hang, resolved), what the incident is (communicator,
// operation, sequence number, culprits) and, once confirmed, how and when, and which communicators
// each rank of the node must abort. Every watchdog of the job reads it (the others abort on a
// confirmed hang, and a new decider carries the incident on rather than judging it anew); the
// exporter and `ncclscope analyze` read it so they never show a confirmed hang as a suspect.
//
// A line format parsed without libraries (design rule 3: it is read inside training processes),
// treated as hostile input: anything malformed is rejected whole, with the line named, and
// nothing acts on it.
//
//   ncclscope-incident 1
//   job <16 hex: JobKey(job id, restart)> <job id> <restart>
//   mode report|abort
//   holder <pid> <global rank, -1 unknown>
//   written <wall-clock ns of the latest look>
//   passes <looks by holders in this incident>
//   stage none|suspect|hang|resolved
//   incident <16 hex: IncidentKey of the headline, 0 for none> <class>
//   op <16 hex communicator> <operation> <sequence number>    ("op 0000000000000000 - 0": none)
//   comm-name <percent-encoded name, "-" none>
//   culprits <rank>,<rank>...                                  ("culprits -": none)
//   onset <wall-clock ns the wait began>
//   confirmed <wall-clock ns, 0 not yet> none|proof|time
//   resolved <wall-clock ns, 0 not>
//   why <percent-encoded words: what confirmed it, or what would>
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

namespace ncclscope::hang_detector {

enum class IncidentStage : uint8_t { kNone, kSuspect, kHang, kResolved };
// How a hang was confirmed: by proof (the culprit is gone or frozen, ranks disagree, a wait-for
// cycle, the job ended with it outstanding) or by time (it outlasted the job's normal pauses).
enum class ConfirmedHow : uint8_t { kNot, kProof, kTime };

struct IncidentWait {
  uint64_t comm_id = 0;
  std::vector<int> ranks;  // global ranks that issued the stuck operation and wait in it
  bool operator==(const IncidentWait&) const = default;
};

struct IncidentRecord {
  // The run of the job.
  uint64_t job = 0;    // JobKey(job_id, restart)
  std::string job_id;  // [A-Za-z0-9._-], as the ring headers hold it
  uint32_t restart = 0;
  bool abort_mode = false;  // NCCLSCOPE_ON_HANG=abort: a confirmed hang never resolves
  // Who looked last, and when.
  int holder_pid = 0;
  int holder_rank = -1;
  int64_t written_wall_ns = 0;
  uint64_t passes = 0;
  // The incident. Its identity is fixed once it is confirmed.
  IncidentStage stage = IncidentStage::kNone;
  uint64_t incident = 0;
  std::string cls = "-";  // the headline's verdict class ("missing", ...), "-" for none
  uint64_t comm_id = 0;
  std::string comm_name;
  std::string op = "-";
  uint64_t seq = 0;
  std::vector<int> culprits;
  int64_t onset_wall_ns = 0;
  ConfirmedHow how = ConfirmedHow::kNot;
  int64_t confirmed_wall_ns = 0;
  int64_t resolved_wall_ns = 0;
  std::string why;
  std::vector<uint64_t> hang_comms;  // communicators of confirmed hang verdicts
  std::vector<IncidentWait> waits;   // where the waiting ranks wait
  bool operator==(const IncidentRecord&) const = default;
};

// Bounds of what the parser accepts (a record of a 4096-rank node stays far below them).
inline constexpr size_t kMaxIncidentBytes = 1 << 20;
inline constexpr size_t kMaxIncidentEntries = 16384;  // hang-comm and wait lines together
inline constexpr int kMaxIncidentRank = 1 << 24;

const char* IncidentStageName(IncidentStage s);  // "none", "suspect", "hang", "resolved"
const char* ConfirmedHowName(ConfirmedHow h);    // "none", "proof", "time"

std::string RenderIncident(const IncidentRecord& r);

// Parses a record. Returns false and sets *error (what is wrong, with the line number) on any
// malformed, truncated, oversized or out-of-range input.
bool ParseIncident(std::string_view text, IncidentRecord* out, std::string* error);

// The communicators `rank` must abort under a record: none unless it is a confirmed hang; then
// every hang-comm and each wait that lists the rank. Sorted, unique.
std::vector<uint64_t> CommsToAbort(const IncidentRecord& r, int rank);

// Reads <path> (at most kMaxIncidentBytes + 1 bytes; no symlink followed). Returns 0 and fills
// *text, ENOENT when there is none, or another errno.
int ReadSmallFile(const std::string& path, std::string* text);

}  // namespace ncclscope::hang_detector
