// One ring file as the detectors see it: its header, and its records compacted to what the
// detectors read. A record keeps its times, sequence number, group and flags (48 bytes); the fields
// that repeat from call to call (communicator, op, count, dtype, reduction, peer, result, stream)
// are interned once per file as a shape. A 4096-rank job of 10,000 records per rank then fits in
// about 2 GB instead of 5.6 GB of full copies. Built once, then read-only: safe to read from
// several threads.
#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hang_detector/ingest/process_probe.h"
#include "trace/numerics_record.h"
#include "trace/nvtx_names.h"
#include "trace/record.h"
#include "trace/ring_visitor.h"

namespace ncclscope::hang_detector {

inline constexpr uint32_t kNoRecord = UINT32_MAX;

// What repeats from call to call. For memory and registration calls count and aux (bytes, a
// pointer) are not kept: no detector reads them and they would make every shape unique.
struct OpShape {
  uint64_t comm_id = 0;
  uint64_t count = 0;
  uint64_t aux = 0;
  uint64_t stream = 0;
  uint32_t op = 0;
  int32_t dtype = -1;
  int32_t redop = -1;
  int32_t peer = -1;
  int32_t result = 0;
  bool operator==(const OpShape&) const = default;
};

// One device_compute record (the CUPTI probe's, trace/record.h), kept whole: its numbers differ
// from record to record, so a shape would not compact them.
struct DeviceCompute {
  uint32_t pos = 0;  // the record's position in RankFile::ops
  uint64_t comm_id = 0;
  uint64_t seq = 0;
  uint64_t group_id = 0;
  uint32_t launch_op = 0;  // OpType of the call that launched the NCCL kernel
  uint32_t kernels = 0;
  int64_t compute_ns = -1;  // -1: unknown (no earlier NCCL kernel seen, or activity lost)
  uint64_t gpu_start = 0;
};

// One numerics record (NCCLSCOPE_NUMERICS, trace/numerics_record.h), kept whole: its counts and
// hash differ from record to record, and a shape keeps neither.
struct NumericsEntry {
  uint32_t pos = 0;  // the numerics record's position in RankFile::ops (after its collective's)
  trace::NumericsSample sample;
};

// Whether records of this op are calls of the program, which carry the NVTX context of their
// thread; records the probe writes itself (profiler, CUPTI, NVTX names: op 90 on) carry none.
inline constexpr bool CarriesNvtx(uint32_t op) {
  return op < static_cast<uint32_t>(trace::OpType::kProfilerAttach);
}

struct OpRecord {
  int64_t t_enter_ns;
  int64_t t_exit_ns;
  int64_t t_device_done_ns;
  uint64_t seq;
  uint64_t group_id;
  uint32_t shape;  // index into RankFile::shapes
  uint32_t flags;
};
static_assert(sizeof(OpRecord) == 48);

// For a rank seen through another node's digest: what that node observed of its writer, whose
// process only that node can check. A ring file read here has none; its liveness comes from this
// host's probe (same host) or from the heartbeat alone. The decoder shifts a digest's times onto
// this host's clock (by the difference of the digest's production time and its arrival), so
// heartbeat ages and waits compare without trusting the two hosts' clocks to agree.
struct RemoteObservation {
  ProcessState process = ProcessState::kUnknown;
  std::string source;  // where it came from ("http://node7:9400/digest", a file path), for evidence
};

// One ring file, in wall-clock ns so files of different hosts compare (to NTP precision, enough
// for seconds-scale hang decisions).
struct RankFile {
  std::shared_ptr<const trace::RingInfo> snap;  // header and comm table; records live in `ops`
  int rank = -1;                                // global rank, -1 when unknown
  int64_t wall_offset = 0;  // add to a monotonic time of this file to get wall-clock ns
  int64_t heartbeat_wall = 0;
  int64_t last_completed_pos = -1;  // newest record with a device completion stamped
  // Oldest entry time (monotonic) of a record still pending or still inside a blocking call:
  // how long this rank has been stuck waiting, if at all. INT64_MAX when nothing waits.
  int64_t oldest_waiting_enter = INT64_MAX;
  uint32_t oldest_waiting_pos = kNoRecord;
  std::vector<OpShape> shapes;
  std::vector<OpRecord> ops;                  // oldest first; a record's position is its index here
  std::vector<DeviceCompute> device_compute;  // in file order; empty without NCCLSCOPE_CUPTI
  std::vector<NumericsEntry> numerics;        // in file order; empty without NCCLSCOPE_NUMERICS
  // (position, writer index) where a run of consecutive writer indices starts: torn slots skipped
  // while reading make the indices jump.
  std::vector<std::pair<uint32_t, uint64_t>> index_runs;
  // Set for a rank read from a digest rather than from its ring file.
  std::optional<RemoteObservation> remote;
  // The longest pause of records not held here (a digest keeps only the newest; the checkpoint
  // that set the job's normal pause may be older), in ns; 0 for a whole ring file.
  int64_t pause_before_ns = 0;
  // The NVTX context word (trace/record.h, "NVTX context": step and phase) of the calls, run-length
  // coded: (position, word) where a run of calls made in one context starts. Consecutive calls
  // share a step and phase nearly always, so this costs a few entries per step, not a word per
  // record. Records the probe writes itself (op 90 and above) carry none and leave a run intact.
  // Empty when no call carried a context (no NVTX injection).
  std::vector<std::pair<uint32_t, uint32_t>> nvtx_runs;
  trace::NvtxNames nvtx_names;  // the contexts' names, from nvtx_phase_name/range_name records

  int64_t Wall(int64_t monotonic_ns) const { return monotonic_ns + wall_offset; }
  uint32_t size() const { return static_cast<uint32_t>(ops.size()); }
  const OpShape& ShapeAt(uint32_t pos) const { return shapes[ops[pos].shape]; }
  // The record rebuilt; send/recv buffers, tid, and count/aux of memory calls read as 0.
  trace::RecordData At(uint32_t pos) const;
  // The writer's record index (trace::StoredRecord::index), for evidence.
  uint64_t IndexOf(uint32_t pos) const;
  // The NVTX context word of the call at pos: 0 when it carried none. Only calls (op below 90)
  // have one; for another record it is the preceding call's.
  uint32_t NvtxWordAt(uint32_t pos) const;
  // Where (step, phase, innermost range) the call at pos was made; known() false when unknown.
  trace::NvtxWhere NvtxAt(uint32_t pos) const { return nvtx_names.Of(NvtxWordAt(pos)); }
  // The longest stretch this rank's records show between two of its operations (entry to entry,
  // only where no record between them is missing) or inside one (entry to device completion, a
  // blocking call's entry to exit), pause_before_ns included: what stage two of a hang verdict
  // learns is normal for the job. Nothing that ended after the watchdog aborted a communicator of
  // this process counts: a wait the abort ended is the incident, not a pause.
  int64_t LongestPauseNs() const;
};

// Compacts the records of one file into a RankFile as they stream by. Not thread-safe; one per
// file, so files can be compacted in parallel.
class RankFileBuilder final : public trace::RingVisitor {
 public:
  explicit RankFileBuilder(RankFile* out) : out_(out) {}
  void BeginFile(const trace::RingInfo& info) override;
  void Records(const trace::StoredRecord* batch, size_t n) override;
  void EndFile(const trace::RingInfo& info) override;

 private:
  struct ShapeHash {
    size_t operator()(const OpShape& s) const;
  };
  uint32_t Intern(const OpShape& s);
  // A process whose watchdog aborted communicators (trace::kHeaderWatchdogAborted): the operations
  // of those communicators that were still pending at the abort were abandoned, not completed;
  // whatever completion the device stamped afterwards, they stay pending (flagged
  // kFlagByWatchdog), so the job's wait reads the same before and after the abort.
  void MarkAbandoned();

  RankFile* out_;
  trace::RingInfo info_;
  std::unordered_map<OpShape, uint32_t, ShapeHash> shape_ids_;
  uint32_t last_shape_ = kNoRecord;
  uint64_t next_index_ = UINT64_MAX;
};

}  // namespace ncclscope::hang_detector
