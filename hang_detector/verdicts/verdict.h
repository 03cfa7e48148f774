// The correlator's answer: verdicts (what is wrong, where, who, since when, and the records that
// prove it), the "what is the job waiting on" view, and what the input lacked. Plain data;
// rendering lives in verdict_text.h (text) and in the CLI (JSON).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ncclscope::hang_detector {

// Hard faults before symptoms, up to kDead; the numerics classes came later and are appended so
// the values stay what they were (the correlator's Priority, not the value, orders verdicts:
// hangs, then numerics, then stragglers).
enum class VerdictClass : uint8_t {
  kHealthy = 0,
  kStraggler,    // later step: sustained slow rank or link (culprit + victims)
  kDeviceStall,  // every rank issued #N, device work never finishes (localized later by the plugin)
  kMissing,
  kDesync,
  kP2PDeadlock,
  kInitHang,
  kFrozen,
  kDead,
  // Numerics (NCCLSCOPE_NUMERICS): the job goes on, computing wrong numbers.
  kNanOrigin,      // the earliest sampled collective where some ranks' inputs held NaN/Inf
  kCorruptOutput,  // a rank's output differs where NCCL makes every rank's output identical
};

// "healthy", "straggler", "device-stall", "missing", "desync", "p2p-deadlock", "init-hang",
// "frozen", "dead", "nan-origin", "corrupt-output". Thread-safe.
const char* VerdictClassName(VerdictClass c);
// True for every class that means the job cannot make progress (or computes garbage because ranks
// disagree on what they call). Never for stragglers and numerics verdicts: the job progresses,
// nothing may abort or page on them as on a hang. Thread-safe.
bool IsHang(VerdictClass c);
// nan-origin and corrupt-output. Thread-safe.
bool IsNumerics(VerdictClass c);

// One record that proves a verdict: whose, which (RingSnapshot record index, stable across
// wraps), and what it shows in one line.
struct Evidence {
  int rank = -1;  // global rank, -1 when the file does not know it
  uint64_t record_index = 0;
  bool has_record = true;  // false for evidence from a header (heartbeat, pid, missing file)
  std::string text;
  // Read from a PyTorch Flight Recorder dump: the record_id of the entry the record stands for,
  // which is how the dump names it (record_index is the reader's own numbering). -1 otherwise.
  int64_t fr_record_id = -1;
};

struct Verdict {
  VerdictClass cls = VerdictClass::kHealthy;
  uint64_t comm_id = 0;  // 0 when the verdict is about a process, not a communicator
  std::string comm_name;
  std::string op;             // "allreduce", "send", "comm_split", ... ("" when none)
  uint64_t seq = 0;           // collective or p2p sequence number (split index for comm_split)
  std::vector<int> culprits;  // global ranks, sorted
  std::vector<int> victims;   // ranks that only wait, sorted
  // Members whose data is absent here (no ring file, no digest: another node, an unreachable one).
  // Never culprits: nothing shows what they did. When the ranks seen all wait, the culprit is among
  // them. `unseen` holds their global ranks where known; unseen_count counts them all.
  std::vector<int> unseen;
  int unseen_count = 0;
  bool tie = false;     // the evidence cannot single out a culprit among `culprits`
  double since_s = 0;   // how long the victims have waited (or the rank has been gone)
  std::string summary;  // one line: what happened, without the class/comm/op prefix
  std::vector<Evidence> evidence;
  // Two stages (hang classes only): a wait is first a suspect, reported and never acted on; it is
  // confirmed when the culprit is shown not to be working (gone, frozen, ranks disagree, a
  // wait-for cycle, the job ended) or when the wait outlasts what this job has shown to be normal.
  bool confirmed = false;
  bool confirmed_by_time = false;  // confirmed because the wait outlasted the rule, not by proof
  double confirm_after_s = 0;      // a suspect: the wait (since_s) at which time alone confirms it
  std::string confirmed_by;        // why it is confirmed, or what would confirm it
  std::string activity;            // what the culprits are doing: where they are, alive or not
  // Device stalls: where the work is stuck, from the profiler's markers and proxy progress. stage
  // "" (not localized), "not-started" (the kernel never started: its stream is blocked by earlier
  // work), "peer-wait" (started, waiting on peer `peer` over channel `channel`: side "send"
  // waits for the peer's credit, "recv" for its data), "network" (handed to the network, never
  // completed: the link `rank` -> `peer`), "gpu" (started, its own GPU neither produces nor
  // consumes), "proxy-stalled" (the rank's proxy reports nothing while its heartbeat goes on).
  struct StallSite {
    std::string stage;
    int rank = -1;     // global rank whose side is named
    int peer = -1;     // global rank of the peer, -1 none
    int channel = -1;  // NCCL channel, -1 none
    std::string side;  // "send", "recv" or ""
  } stall;
  // Where in the training loop the operation at issue was called, from the NVTX ranges the
  // records carry (docs/nvtx.md): per role and distinct place, the ranks that were there. The
  // culprits' place is that of their stuck, disagreeing or late operation, else of their newest
  // call (a rank that never issued #N was last seen there); the victims' that of the operation
  // they wait in. A culprit still in "step 12, backward" while its victims wait in "step 12,
  // optimizer" is the clue. Empty when the records carry no NVTX context: never guessed.
  struct Place {
    std::string role;        // "culprit" or "victim"
    std::vector<int> ranks;  // global ranks, sorted
    bool has_step = false;
    uint64_t step = 0;       // the training step (the first one, for a range of steps)
    uint64_t last_step = 0;  // == step unless the place spans several steps (stragglers)
    std::string phase;       // "forward", "backward", ...; "" unknown or none
    std::string range;       // the innermost range when it is not the phase; "" none
    std::string basis;       // which records say so: "its newest call allreduce #6", ...
  };
  std::vector<Place> where;  // culprits first, at most kMaxPlaces per role, most ranks first
  static constexpr size_t kMaxPlaces = 4;
  // Read from Flight Recorder dumps, a send or receive at issue: torch's p2p_seq_id of it on rank
  // fr_p2p_rank. seq counts the sends (receives) between that rank and one peer; torch's counter
  // counts every p2p operation of the process group on that rank. 0 / -1 otherwise.
  int64_t fr_p2p_seq_id = 0;
  int fr_p2p_rank = -1;
};

// A hang-class verdict that is confirmed: the only kind anything may act on (abort, page).
// Thread-safe.
bool IsConfirmedHang(const Verdict& v);
// A hang-class verdict still waiting for confirmation. Thread-safe.
bool IsSuspect(const Verdict& v);

// Per communicator: the lowest sequence number not completed on every member, and who has and has
// not issued it.
struct WaitingOn {
  uint64_t comm_id = 0;
  std::string comm_name;
  std::string op;
  uint64_t seq = 0;
  std::vector<int> issued;      // ranks that issued #seq and have not completed it
  std::vector<int> completed;   // ranks on which it completed
  std::vector<int> not_issued;  // member ranks that have not issued it
  double since_s = 0;           // since the earliest issue
  int unseen = 0;               // members with no data here: whether they issued it is unknown
};

// What the input lacked, so a verdict built on partial data says so.
struct InputReport {
  int files = 0;
  std::string file_kind = "ring file(s)";  // what the files were (JobIndex::file_kind)
  int world_size = -1;
  int ranks_seen = 0;                   // distinct ranks with data (files and digests)
  int digest_ranks = 0;                 // of `files`, those read from another node's digest
  std::vector<std::string> unreadable;  // one line per file that could not be read
  std::vector<int> missing_ranks;       // ranks of the job with no file
  std::vector<int> unreadable_ranks;    // ranks whose file is there but could not be read
  std::vector<int> wrapped_ranks;       // ranks whose oldest records were overwritten
  std::vector<int> torn_ranks;     // ranks with records mid-write (or the writer died mid-record)
  std::vector<int> dropped_ranks;  // ranks that dropped records or communicators
  std::vector<std::string> notes;  // anything else worth knowing (post-mortem mode, ...)
  bool post_mortem = false;        // every process had ended; times are relative to the end
  std::string job;                 // the job id the files carry ("" when they carry none)
  uint32_t restart = 0;            // its restart count (torchrun), 0 when unknown
  int64_t run_start_wall_ns = 0;   // when the run's first process began (its files' starts)
};

// The job's incident as its watchdog recorded it (hang_detector/incident/incident_record.h), when
// the directory holds a record of this run: what every reader shows, so a confirmed hang is never
// shown as a suspect again.
struct IncidentView {
  std::string key;    // 16 hex digits; empty: no record
  std::string stage;  // "suspect", "hang" or "resolved"
  std::string how;    // "proof", "time", or "" when not confirmed
  int64_t onset_wall_ns = 0;
  int64_t confirmed_wall_ns = 0;  // 0: not confirmed
  int64_t resolved_wall_ns = 0;   // 0: not resolved
  std::string resolution;         // how it ended, in words ("confirmed by time, then progressed")
  int holder_rank = -1;           // the rank whose watchdog wrote it last
  bool abort_mode = false;        // NCCLSCOPE_ON_HANG=abort: a confirmed hang never resolves
};

struct Analysis {
  std::vector<Verdict>
      verdicts;  // most important first; exactly one kHealthy when nothing is wrong
  std::vector<WaitingOn> waiting;
  InputReport input;
  IncidentView incident;
  bool usable = true;  // false when nothing could be analysed (no readable file)
};

// The stage of a verdict's class outside the two hang stages: "straggler", "numerics" or
// "healthy". Thread-safe.
const char* FindingStage(VerdictClass c);

// The stage of the whole analysis, from its first verdict: "hang" (confirmed), "suspect",
// "numerics", "straggler" or "healthy"; "unusable" when nothing could be analysed. Thread-safe.
const char* StageName(const Analysis& analysis);

// The CLI's exit code for an analysis: 0 healthy, 1 a finding that is not a hang (straggler,
// nan-origin, corrupt-output), 2 confirmed hang/deadlock/desync/dead, 3 unusable input, 4 suspect
// (a wait not yet confirmed as a hang). Thread-safe.
int ExitCode(const Analysis& analysis);

}  // namespace ncclscope::hang_detector
