// The job model: every ring file of one job indexed in one pass, so the detectors match collectives
// by (communicator, sequence number) and send/recv by (communicator, sender, receiver, sequence)
// with array lookups and never rescan the records. Records are kept compacted per file
// (rank_file.h); lanes store record positions (4 bytes per record). A job directory is streamed
// file by file (job_ingest.cpp), so full records of the whole job are never held at once.
// Built once, then read-only: safe to read from several threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hang_detector/ingest/rank_file.h"
#include "trace/record.h"
#include "trace/trace_set.h"

namespace ncclscope::hang_detector {

// Where an op stands on one rank.
enum class OpState : uint8_t {
  kNotIssued,  // the rank's stream of this communicator ends before it
  kLost,       // not in the ring any more (wrapped) or never recorded (dropped)
  kPending,    // issued, device completion not stamped yet
  kUnknown,    // issued, completion untracked and nothing later completed on that rank
  kCompleted,  // device completion stamped (or untracked and later work completed), or it failed
};
inline bool IsWaitingState(OpState s) {
  return s == OpState::kPending || s == OpState::kUnknown;
}

// The collectives one rank issued on one communicator, by sequence number.
struct CollLane {
  uint32_t file = 0;
  int comm_rank = -1;
  uint64_t first_seq = 0;     // sequence number of pos[0]
  std::vector<uint32_t> pos;  // record positions; kNoRecord for holes
  uint64_t EndSeq() const { return first_seq + pos.size(); }  // one past the last
  uint32_t PosOf(uint64_t seq) const {
    return seq >= first_seq && seq < EndSeq() ? pos[seq - first_seq] : kNoRecord;
  }
};

// The sends of `src` to `dst` and the receives of `dst` from `src` on one communicator.
struct P2PLane {
  int src = -1, dst = -1;  // comm ranks
  CollLane sends;          // comm_rank = src; empty when src never sent to dst
  CollLane recvs;          // comm_rank = dst; empty when dst never received from src
  bool has_sends = false, has_recvs = false;
};

struct CommMember {
  uint32_t file = 0;
  int comm_rank = -1;
};

struct CommModel {
  uint64_t id = 0;
  std::string name;  // first non-empty name any member recorded
  int nranks = -1;
  uint64_t parent_id = 0;
  uint32_t split_index = 0;
  uint32_t origin = 0;
  std::vector<CommMember> members;  // files whose comm table holds it, by comm rank when known
  std::vector<CollLane> lanes;      // one per file that recorded a collective on it
  std::unordered_map<uint64_t, uint32_t> pair_index;  // (src << 32 | dst) -> p2p_lanes
  std::vector<P2PLane> p2p_lanes;
  int MemberFile(int comm_rank) const;  // file index of a comm rank, -1 when unknown
};

// A communicator creation call: ncclCommInitRank* (child = the new id) or ncclCommSplit/Shrink
// (parent = comm_id of the record, split index = seq).
struct InitCall {
  uint32_t file = 0;
  uint32_t pos = 0;
  trace::OpType op = trace::OpType::kUnknown;
  uint64_t child_id = 0;
  uint64_t parent_id = 0;  // 0 for inits from a unique id
  uint32_t split_index = 0;
  int nranks = -1;  // inits only
  bool in_call = false;
};

struct IngestOptions {
  int threads = 2;  // files compacted in parallel; the placement into lanes is one thread
  // The job whose files are indexed when the directory holds several (the ring header's job id);
  // empty: the job of the file with the newest heartbeat (trace/job_choice.h). The others are left
  // out with one line in notes().
  std::string job;
};

// What reading a job directory cost, for `ncclscope analyze --timing` and the scale benchmark.
struct IngestStats {
  uint64_t files = 0;
  uint64_t records = 0;
  int threads = 1;
  double read_s = 0;   // mapping, copying and compacting every file
  double place_s = 0;  // sorting files and placing records into lanes
};

class JobIndex {
 public:
  // Indexes snapshots already in memory (tests, the in-process watchdog). The set may be freed
  // afterwards: the index keeps its own compact copy. Files of other jobs than set.job (empty: the
  // newest heartbeat's) are left out, as FromDir does.
  explicit JobIndex(const trace::TraceSet& set);
  // Streams every *.ring file of dir (see job_ingest.cpp). A damaged file is listed in errors();
  // nullopt (and *error) only when the directory itself cannot be read. Thread-safe.
  static std::optional<JobIndex> FromDir(const std::string& dir, const IngestOptions& options,
                                         std::string* error);
  // The same over the ring files of several directories as one job (the node directories of a
  // job copied together for a post-mortem): one job chosen among all their files, two files of
  // one rank both kept as within one directory. nullopt (and *error) when one directory cannot be
  // read. Thread-safe.
  static std::optional<JobIndex> FromDirs(const std::vector<std::string>& dirs,
                                          const IngestOptions& options, std::string* error);
  // Indexes files compacted elsewhere: ring files of this node together with ranks decoded from
  // other nodes' digests. `errors` lists what could not be had (unreachable nodes, bad digests).
  // `file_kind` names what the files are in the input report; `notes` are added to notes().
  // `unreadable_ranks`: ranks whose file is there but could not be read, where its name says
  // whose it is (a Flight Recorder dump's).
  static JobIndex FromFiles(std::vector<RankFile> files, std::vector<std::string> errors,
                            std::vector<std::string> notes = {},
                            std::string file_kind = "ring file(s)",
                            std::vector<int> unreadable_ranks = {});

  const std::vector<RankFile>& files() const { return files_; }
  const std::vector<CommModel>& comms() const { return comms_; }
  const std::vector<InitCall>& inits() const { return inits_; }
  const CommModel* FindComm(uint64_t id) const;
  // The largest plausible world size a header claims (trace/world_size.h); -1 when none does.
  int world_size() const { return world_size_; }
  // Ranks of 0..world_size-1 with no readable file.
  const std::vector<int>& missing_ranks() const { return missing_ranks_; }
  // Of those, the ones whose file is there but could not be read (sorted).
  const std::vector<int>& unreadable_ranks() const { return unreadable_ranks_; }
  // What the index ignored (files of another job, implausible world sizes, sequence numbers), one
  // line each, for the input report.
  const std::vector<std::string>& notes() const { return notes_; }
  // Records that could not be placed (p2p on a communicator whose table entry was dropped).
  uint64_t unplaced_records() const { return unplaced_; }
  // One line per file that could not be read, naming it (in directory order).
  const std::vector<std::string>& errors() const { return errors_; }
  // "ring file(s)", or what else the files were read from ("Flight Recorder dump(s)").
  const std::string& file_kind() const { return file_kind_; }
  const IngestStats& stats() const { return stats_; }

  OpState StateOf(uint32_t file, uint32_t pos) const;
  // State of collective `seq` in a lane (kNotIssued past its end, kLost before its start or in a
  // hole). `wrapped` says whether the lane's file lost records to wrapping.
  OpState StateAt(const CollLane& lane, uint64_t seq) const;

 private:
  JobIndex() = default;
  // Takes the compacted files (in any order), sorts them by global rank and indexes them.
  void Build(std::vector<RankFile> files);
  CommModel& CommFor(uint64_t id);
  void IndexFile(uint32_t f);
  void ListMissingRanks();

  std::vector<RankFile> files_;
  std::vector<CommModel> comms_;
  std::unordered_map<uint64_t, uint32_t> comm_index_;
  std::vector<InitCall> inits_;
  std::vector<int> missing_ranks_;
  std::vector<int> unreadable_ranks_;
  int world_size_ = -1;
  uint64_t unplaced_ = 0;
  uint64_t implausible_seqs_ = 0;
  std::vector<std::string> errors_;
  std::vector<std::string> notes_;
  std::string file_kind_ = "ring file(s)";
  IngestStats stats_;
};

// The comparable part of a collective or p2p record: what every rank must agree on.
struct OpSignature {
  uint32_t op = 0;
  int32_t dtype = -1;
  int32_t redop = -1;  // reducing collectives only; -1 there: unknown
  int32_t root = -1;   // rooted collectives only
  uint64_t count = 0;
  // An unknown reduction op agrees with any: a rank recorded by the profiler alone (no interposer)
  // knows it only from NCCL's NVTX range, which one rank may lack (NCCL_NVTX_DISABLE=1 there), and
  // "unknown" must never read as a different operation.
  bool operator==(const OpSignature& o) const {
    return op == o.op && dtype == o.dtype && root == o.root && count == o.count &&
           (redop == o.redop || redop < 0 || o.redop < 0);
  }
};
// What members of one collective (or a send and its receive) must agree on; read from the interned
// shape, so the per-sequence scans never rebuild a record.
OpSignature SignatureOf(const OpShape& shape);
// "type allgather vs allreduce, count 32 vs 256": the fields in which b differs from a.
std::string DescribeDifference(const OpSignature& a, const OpSignature& b);
// "allreduce count=256 float32 sum" for evidence lines.
std::string DescribeOp(const trace::RecordData& r);

}  // namespace ncclscope::hang_detector
