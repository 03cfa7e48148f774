#include "exporters/timeline/timeline_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "exporters/operation_size.h"
#include "exporters/timeline/clock_bound.h"
#include "hang_detector/verdict.h"
#include "trace/nccl_names.h"

namespace ncclscope::exporters::timeline {

namespace {

using trace::OpType;
using trace::RecordData;
using trace::RingInfo;
using trace::StoredRecord;

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer: ids spread over 64 bits
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Track uuids: the metadata track is 1 (perfetto_writer.cpp); rank file i owns (i + 1) << 24 and
// the 2^24 uuids above it, one per track of that rank.
constexpr int kTrackBits = 24;

// Where a verdict names this rank, and the record its evidence cites (if any).
struct Mark {
  const hang_detector::Verdict* verdict;
  std::optional<uint64_t> record_index;
};

// One ring file's records, kept until its end so that each operation's device start marker,
// which the probe writes after the call's record, is known when its slice is written.
class FileRecords final : public trace::RingVisitor {
 public:
  explicit FileRecords(const std::unordered_set<uint64_t>* wanted_indices)
      : wanted_indices_(wanted_indices) {}

  void BeginFile(const RingInfo& info) override {
    info_ = info;
    calls_.reserve(static_cast<size_t>(
        std::min<uint64_t>(info.write_pos - info.overwritten, info.record_capacity)));
  }
  void Records(const StoredRecord* batch, size_t n) override {
    for (size_t i = 0; i < n; ++i) Add(batch[i]);
  }
  void EndFile(const RingInfo& info) override { info_.torn_records = info.torn_records; }

  const RingInfo& info() const { return info_; }
  const std::vector<StoredRecord>& calls() const { return calls_; }
  // When the host saw the kernel of (comm, seq, peer-and-op key) start; nullopt: no marker.
  std::optional<int64_t> DeviceStart(uint64_t key) const {
    const auto it = device_starts_.find(key);
    if (it == device_starts_.end()) return std::nullopt;
    return it->second;
  }
  std::optional<int64_t> TimeOfIndex(uint64_t index) const {
    const auto it = index_times_.find(index);
    if (it == index_times_.end()) return std::nullopt;
    return it->second;
  }
  const std::string& PhaseName(uint32_t context) const {
    static const std::string kNone;
    const auto it = phase_names_.find(context);
    return it == phase_names_.end() ? kNone : it->second;
  }
  int64_t last_ns() const { return last_ns_; }

  static uint64_t CollectiveKey(uint64_t comm, uint64_t seq) { return Mix(comm ^ Mix(seq)); }
  static uint64_t P2pKey(uint64_t comm, uint64_t seq, int peer, OpType op) {
    return Mix(comm ^ Mix(seq ^ Mix((static_cast<uint64_t>(static_cast<uint32_t>(peer)) << 16) |
                                    static_cast<uint64_t>(op))));
  }

 private:
  void Add(const StoredRecord& r) {
    const RecordData& d = r.data;
    const auto op = static_cast<OpType>(d.op);
    last_ns_ = std::max({last_ns_, d.t_enter_ns, d.t_exit_ns, d.t_device_done_ns});
    if (wanted_indices_ != nullptr && wanted_indices_->count(r.index) != 0) {
      index_times_[r.index] = d.t_enter_ns;
    }
    if (op == OpType::kDeviceStart && d.seq != 0) {
      Earliest(CollectiveKey(d.comm_id, d.seq), d.t_enter_ns);
    } else if (op == OpType::kP2pDeviceStart && d.seq != 0) {
      Earliest(P2pKey(d.comm_id, d.seq, d.peer, static_cast<OpType>(d.redop)), d.t_enter_ns);
    } else if (op == OpType::kNvtxPhaseName) {
      const char* name = reinterpret_cast<const char*>(&d.group_id);
      phase_names_[static_cast<uint32_t>(d.seq)] =
          std::string(name, strnlen(name, trace::kNvtxNameBytes));
    } else if (!trace::IsProbeWritten(op)) {  // a call: the probe's own records get no slice
      calls_.push_back(r);
    }
  }
  void Earliest(uint64_t key, int64_t t) {
    auto [it, fresh] = device_starts_.emplace(key, t);
    if (!fresh) it->second = std::min(it->second, t);
  }

  const std::unordered_set<uint64_t>* wanted_indices_;
  RingInfo info_;
  std::vector<StoredRecord> calls_;
  std::unordered_map<uint64_t, int64_t> device_starts_;
  std::unordered_map<uint64_t, int64_t> index_times_;
  std::unordered_map<uint32_t, std::string> phase_names_;
  int64_t last_ns_ = INT64_MIN;
};

struct FileEntry {
  std::string name;
  RingInfo info;  // header and comm table
  int64_t wall_offset = 0;
};

int64_t WallOffset(const RingInfo& info) {
  return info.start_realtime_ns - info.start_monotonic_ns;
}

bool CommMatches(const trace::CommInfo& c, const std::string& wanted) {
  if (wanted.empty() || c.name == wanted) return true;
  if (wanted.size() < 4) return false;
  const std::string hex = fmt::format("{:016x}", c.id);
  return hex.compare(0, wanted.size(), wanted) == 0;
}

// Writes one rank's tracks and events.
class RankWriter {
 public:
  RankWriter(const FileEntry& file, const FileRecords& records, size_t file_index,
             const TimelineOptions& options, std::pair<int64_t, int64_t> window_ns,
             const std::vector<Mark>& marks, TimelineSink* sink, TimelineSummary* summary)
      : file_(file),
        records_(records),
        options_(options),
        marks_(marks),
        sink_(sink),
        summary_(summary),
        process_uuid_(static_cast<uint64_t>(file_index + 1) << kTrackBits) {
    for (const trace::CommInfo& c : file.info.comms) comms_[c.id] = &c;
    from_ns_ = window_ns.first;
    to_ns_ = window_ns.second;
  }

  void Write() {
    const RingInfo& info = file_.info;
    const int pid = Pid();
    std::string name = info.global_rank >= 0 ? fmt::format("rank {}", info.global_rank)
                                             : fmt::format("rank ? ({})", file_.name);
    name += fmt::format(" · {} · pid {}", info.host, info.pid);
    if (!info.gpu_uuid.empty()) name += " · " + info.gpu_uuid;
    sink_->Process(process_uuid_, pid, name);
    ++summary_->ranks_written;
    if (!marks_.empty()) verdict_track_ = NewTrack("ncclscope verdicts");
    ComputeInFlight();
    WriteCalls();
    WriteDeviceWork();
    WriteVerdicts();
  }

 private:
  int Pid() const {
    return file_.info.global_rank >= 0 ? file_.info.global_rank
                                       : 1000000 + static_cast<int>(process_uuid_ >> kTrackBits);
  }
  uint64_t NewTrack(const std::string& name) {
    const uint64_t uuid = process_uuid_ + (++tracks_);
    sink_->Track(uuid, process_uuid_, Pid(), name, tracks_);
    return uuid;
  }
  uint64_t NewCounterTrack(const std::string& name) {
    const uint64_t uuid = process_uuid_ + (++tracks_);
    sink_->CounterTrack(uuid, process_uuid_, Pid(), name);
    return uuid;
  }
  int64_t Wall(int64_t monotonic_ns) const { return monotonic_ns + file_.wall_offset; }
  const trace::CommInfo* Comm(uint64_t id) const {
    const auto it = comms_.find(id);
    return it == comms_.end() ? nullptr : it->second;
  }
  std::string CommName(uint64_t id) const {
    const trace::CommInfo* c = Comm(id);
    if (c != nullptr && !c->name.empty()) return c->name;
    return id == 0 ? std::string() : fmt::format("{:016x}", id);
  }
  bool Selected(const RecordData& d) const {
    if (!options_.comm.empty()) {
      const trace::CommInfo* c = Comm(d.comm_id);
      if (c == nullptr || !CommMatches(*c, options_.comm)) return false;
    }
    return true;
  }
  // [begin, end] (end kOpenEnd: still running) meets the window.
  bool InWindow(int64_t begin, int64_t end) const {
    return begin <= to_ns_ && (end == kOpenEnd || end >= from_ns_);
  }

  // Whether `d` is an operation whose device work the trace draws (and counts in flight).
  bool IsDrawnOperation(const RecordData& d) const {
    return IsOperation(static_cast<OpType>(d.op)) && WasEnqueued(d) &&
           d.t_device_done_ns != trace::kDoneUntracked && d.seq != 0 && Selected(d);
  }
  static bool Completed(const RecordData& d) { return d.t_device_done_ns > 0; }

  // The operations-in-flight counter after each drawn operation's call and after its completion
  // (the counter changes only then), by position in records_.calls().
  void ComputeInFlight() {
    const std::vector<StoredRecord>& calls = records_.calls();
    struct Change {
      int64_t t;
      int delta;
      size_t call;
    };
    std::vector<Change> changes;
    for (size_t i = 0; i < calls.size(); ++i) {
      const RecordData& d = calls[i].data;
      if (!IsDrawnOperation(d)) continue;
      changes.push_back({Wall(d.t_enter_ns), +1, i});
      if (Completed(d)) changes.push_back({Wall(d.t_device_done_ns), -1, i});
    }
    if (changes.empty()) return;
    std::stable_sort(changes.begin(), changes.end(),
                     [](const Change& a, const Change& b) { return a.t < b.t; });
    after_enter_.assign(calls.size(), 0);
    after_done_.assign(calls.size(), 0);
    // Several changes at one time: each sample shows the value once all of them happened.
    int64_t value = 0;
    for (size_t i = 0; i < changes.size();) {
      size_t j = i;
      while (j < changes.size() && changes[j].t == changes[i].t) value += changes[j++].delta;
      for (; i < j; ++i) {
        (changes[i].delta > 0 ? after_enter_ : after_done_)[changes[i].call] = value;
      }
    }
    in_flight_track_ = NewCounterTrack("operations in flight");
  }

  const std::string& CachedName(std::unordered_map<int32_t, std::string>* cache, int32_t key,
                                std::string (*name)(int32_t)) {
    auto [it, fresh] = cache->emplace(key, std::string());
    if (fresh) it->second = name(key);
    return it->second;
  }

  // What a call's slice is named: its operation and communicator ("allreduce · tp").
  const std::string& CallName(const RecordData& d) {
    auto [it, fresh] = call_names_.emplace(std::make_pair(d.comm_id, d.op), std::string());
    if (fresh) {
      const std::string comm = CommName(d.comm_id);
      it->second = trace::OpTypeName(static_cast<OpType>(d.op));
      if (!comm.empty()) it->second += " · " + comm;
    }
    return it->second;
  }

  // A call's arguments (the operation's own are on its device slice).
  void CallArgs(const StoredRecord& r, std::vector<Arg>* args) {
    const RecordData& d = r.data;
    const auto op = static_cast<OpType>(d.op);
    args->clear();
    if (trace::IsCollective(op) || trace::IsP2P(op)) {
      args->push_back(Arg::Int("seq", static_cast<int64_t>(d.seq)));
    }
    if (d.result == trace::kResultInCall) {
      args->push_back(Arg::Str("result", "still in the call"));
    } else if (d.result != 0) {
      args->push_back(Arg::Str("result", CachedName(&results_, d.result, &trace::ResultName)));
    }
    if (d.group_id != 0) args->push_back(Arg::Int("group", static_cast<int64_t>(d.group_id)));
    if (trace::NvtxHasStep(d.reserved)) {
      args->push_back(Arg::Int("step", static_cast<int64_t>(trace::NvtxStep(d.reserved))));
      const std::string& phase = records_.PhaseName(trace::NvtxContextId(d.reserved));
      if (!phase.empty()) args->push_back(Arg::Str("phase", phase));
    }
    args->push_back(Arg::Int("record", static_cast<int64_t>(r.index)));
  }

  // An operation's arguments, on its device slice.
  void OperationArgs(const StoredRecord& r, std::vector<Arg>* args) {
    const RecordData& d = r.data;
    const auto op = static_cast<OpType>(d.op);
    const trace::CommInfo* c = Comm(d.comm_id);
    args->clear();
    args->push_back(Arg::Int("seq", static_cast<int64_t>(d.seq)));
    args->push_back(Arg::Int("count", static_cast<int64_t>(d.count)));
    args->push_back(
        Arg::Int("bytes", static_cast<int64_t>(OperationBytes(d, c != nullptr ? c->nranks : 1))));
    args->push_back(Arg::Str("dtype", CachedName(&dtypes_, d.dtype, &trace::DataTypeName)));
    if (d.redop >= 0) {
      args->push_back(Arg::Str("redop", CachedName(&redops_, d.redop, &trace::RedOpName)));
    }
    if (d.peer >= 0) args->push_back(Arg::Int(trace::IsP2P(op) ? "peer" : "root", d.peer));
    if (trace::NvtxHasStep(d.reserved)) {
      args->push_back(Arg::Int("step", static_cast<int64_t>(trace::NvtxStep(d.reserved))));
    }
    args->push_back(Arg::Int("record", static_cast<int64_t>(r.index)));
  }

  // A slice per NCCL call on its calling thread's track.
  void WriteCalls() {
    std::unordered_map<uint32_t, uint64_t> thread_tracks;
    std::vector<Arg> args;
    const std::vector<StoredRecord>& calls = records_.calls();
    for (size_t i = 0; i < calls.size(); ++i) {
      const StoredRecord& r = calls[i];
      const RecordData& d = r.data;
      if (!Selected(d)) continue;
      const int64_t begin = Wall(d.t_enter_ns);
      const int64_t end = d.t_exit_ns > 0 ? std::max(begin, Wall(d.t_exit_ns)) : kOpenEnd;
      if (!InWindow(begin, end)) continue;
      auto [it, fresh] = thread_tracks.emplace(d.tid, 0);
      if (fresh) it->second = NewTrack(fmt::format("host thread {}", d.tid));
      CallArgs(r, &args);
      CounterSample issued{in_flight_track_, 0};
      SliceEvent slice{it->second, begin, end, CallName(d), "call", &args};
      if (IsDrawnOperation(d)) {
        issued.value = after_enter_[i];
        slice.at_begin = &issued;
      }
      sink_->Slice(slice);
      ++summary_->host_slices;
      if (end == kOpenEnd) ++summary_->open_slices;
    }
  }

  uint64_t FlowOf(const RecordData& d) const {
    const auto op = static_cast<OpType>(d.op);
    if (trace::IsCollective(op)) return CollectiveFlowId(d.comm_id, d.seq);
    const trace::CommInfo* c = Comm(d.comm_id);
    if (c == nullptr || c->rank < 0 || d.peer < 0) return 0;
    return op == OpType::kSend ? P2pFlowId(d.comm_id, c->rank, d.peer, d.seq)
                               : P2pFlowId(d.comm_id, d.peer, c->rank, d.seq);
  }

  // A slice per operation's device execution on its communicator x stream track.
  void WriteDeviceWork() {
    struct StreamTrack {
      uint64_t uuid = 0;
      int64_t free_at = INT64_MIN;  // when the previous operation on it ended
      bool blocked = false;         // an operation on it never ended: what follows never ran
    };
    std::map<std::pair<uint64_t, uint64_t>, StreamTrack> tracks;  // by (comm, stream)
    std::vector<Arg> args;
    const std::vector<StoredRecord>& calls = records_.calls();
    for (size_t i = 0; i < calls.size(); ++i) {
      const StoredRecord& r = calls[i];
      const RecordData& d = r.data;
      if (!IsDrawnOperation(d)) continue;
      const auto op = static_cast<OpType>(d.op);
      const int64_t done = Completed(d) ? Wall(d.t_device_done_ns) : kOpenEnd;
      StreamTrack& track = tracks[{d.comm_id, d.stream}];
      if (track.blocked) continue;
      const std::optional<int64_t> marker = records_.DeviceStart(
          trace::IsCollective(op) ? FileRecords::CollectiveKey(d.comm_id, d.seq)
                                  : FileRecords::P2pKey(d.comm_id, d.seq, d.peer, op));
      // The kernel runs once the call launched it and the stream's earlier work ended; the
      // profiler's start marker, when there is one, says when it did.
      int64_t begin = std::max(marker ? Wall(*marker) : Wall(d.t_enter_ns), track.free_at);
      if (done != kOpenEnd) begin = std::min(begin, done);
      track.free_at = done == kOpenEnd ? INT64_MAX : done;
      track.blocked = done == kOpenEnd;
      if (!InWindow(begin, done)) continue;
      if (track.uuid == 0) {
        track.uuid = NewTrack(fmt::format("{} · stream {:#x}", CommName(d.comm_id), d.stream));
      }
      OperationArgs(r, &args);
      const CounterSample completed{in_flight_track_, done == kOpenEnd ? 0 : after_done_[i]};
      SliceEvent slice{track.uuid, begin, done, trace::OpTypeName(op), "device", &args, FlowOf(d)};
      slice.at_end = &completed;
      sink_->Slice(slice);
      ++summary_->device_slices;
      if (done == kOpenEnd) ++summary_->open_slices;
    }
  }

  void WriteVerdicts() {
    for (const Mark& m : marks_) {
      const hang_detector::Verdict& v = *m.verdict;
      std::optional<int64_t> at;
      if (m.record_index) {
        const std::optional<int64_t> t = records_.TimeOfIndex(*m.record_index);
        if (t) at = Wall(*t);
      }
      // Without a cited record (a rank gone, one that never called): its last sign of life.
      if (!at) {
        const int64_t last = std::max(records_.last_ns(), file_.info.heartbeat_monotonic_ns);
        at = Wall(last);
      }
      std::string name = hang_detector::VerdictClassName(v.cls);
      if (!v.comm_name.empty()) name += " · " + v.comm_name;
      if (!v.op.empty()) name += fmt::format(" {} #{}", v.op, v.seq);
      std::vector<Arg> args = {Arg::Str("summary", v.summary),
                               Arg::Str("stage", v.confirmed ? "confirmed" : "suspect")};
      if (v.tie) args.push_back(Arg::Str("tie", "the evidence names no single culprit"));
      if (!v.stall.stage.empty()) args.push_back(Arg::Str("stall", v.stall.stage));
      sink_->Instant(verdict_track_, *at, name, "verdict", args);
      ++summary_->verdict_marks;
    }
  }

  const FileEntry& file_;
  const FileRecords& records_;
  const TimelineOptions& options_;
  const std::vector<Mark>& marks_;
  TimelineSink* sink_;
  TimelineSummary* summary_;
  uint64_t process_uuid_;
  int tracks_ = 0;
  uint64_t verdict_track_ = 0;
  int64_t from_ns_ = INT64_MIN;
  int64_t to_ns_ = INT64_MAX;
  uint64_t in_flight_track_ = 0;
  std::vector<int64_t> after_enter_;  // ComputeInFlight
  std::vector<int64_t> after_done_;
  std::map<std::pair<uint64_t, uint32_t>, std::string> call_names_;  // by (comm, op)
  std::unordered_map<int32_t, std::string> dtypes_;
  std::unordered_map<int32_t, std::string> redops_;
  std::unordered_map<int32_t, std::string> results_;
  std::unordered_map<uint64_t, const trace::CommInfo*> comms_;
};

// The verdicts naming each rank (their culprits), with the evidence record cited for that rank.
std::unordered_map<int, std::vector<Mark>> MarksByRank(const hang_detector::Analysis* analysis) {
  std::unordered_map<int, std::vector<Mark>> marks;
  if (analysis == nullptr) return marks;
  for (const hang_detector::Verdict& v : analysis->verdicts) {
    if (v.cls == hang_detector::VerdictClass::kHealthy) continue;
    for (int rank : v.culprits) {
      Mark m{&v, std::nullopt};
      for (const hang_detector::Evidence& e : v.evidence) {
        if (e.rank == rank && e.has_record) {
          m.record_index = e.record_index;
          break;
        }
      }
      marks[rank].push_back(m);
    }
  }
  return marks;
}

void AddToClockBound(const FileEntry& file, const FileRecords& records, bool reference,
                     ClockBound* bound) {
  for (const StoredRecord& r : records.calls()) {
    const RecordData& d = r.data;
    if (!trace::IsCollective(static_cast<OpType>(d.op)) || d.seq == 0 || d.t_device_done_ns <= 0) {
      continue;
    }
    const int64_t enter = d.t_enter_ns + file.wall_offset;
    const int64_t done = d.t_device_done_ns + file.wall_offset;
    if (reference) {
      bound->AddReference(d.comm_id, d.seq, enter, done);
    } else {
      bound->AddOther(file.info.host, d.comm_id, d.seq, enter, done);
    }
  }
}

// Where operation around_seq of around_comm happened, on every selected rank that has it: one
// more pass over the files, reading only that operation's records.
class AroundScan final : public trace::RingVisitor {
 public:
  AroundScan(const std::string& comm, uint64_t seq) : comm_(comm), seq_(seq) {}
  void BeginFile(const RingInfo& info) override {
    offset_ = WallOffset(info);
    ids_.clear();
    for (const trace::CommInfo& c : info.comms) {
      if (CommMatches(c, comm_)) ids_.push_back(c.id);
    }
  }
  void Records(const StoredRecord* batch, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      const RecordData& d = batch[i].data;
      const auto op = static_cast<OpType>(d.op);
      if (d.seq != seq_ || !(trace::IsCollective(op) || trace::IsP2P(op)) ||
          std::find(ids_.begin(), ids_.end(), d.comm_id) == ids_.end()) {
        continue;
      }
      first = std::min(first, d.t_enter_ns + offset_);
      last = std::max({last, d.t_enter_ns + offset_, d.t_exit_ns + offset_,
                       d.t_device_done_ns > 0 ? d.t_device_done_ns + offset_ : INT64_MIN});
    }
  }
  void EndFile(const RingInfo&) override {}
  int64_t first = INT64_MAX;
  int64_t last = INT64_MIN;

 private:
  std::string comm_;
  uint64_t seq_;
  int64_t offset_ = 0;
  std::vector<uint64_t> ids_;
};

bool AroundWindow(RingSource& source, const std::vector<FileEntry>& files,
                  const TimelineOptions& options, std::pair<int64_t, int64_t>* window,
                  std::string* error) {
  AroundScan scan(options.around_comm, options.around_seq);
  for (const FileEntry& f : files) {
    if (std::none_of(f.info.comms.begin(), f.info.comms.end(), [&](const trace::CommInfo& c) {
          return CommMatches(c, options.around_comm);
        })) {
      continue;
    }
    std::string ignored;  // an unreadable file is reported by the pass that writes
    source.Visit(f.name, 0, &scan, &ignored);
  }
  if (scan.first == INT64_MAX) {
    *error = fmt::format("no selected rank recorded operation #{} of '{}'", options.around_seq,
                         options.around_comm);
    return false;
  }
  const auto margin = static_cast<int64_t>(options.around_margin_s * 1e9);
  *window = {scan.first - margin, scan.last + margin};
  return true;
}

// A rank's counts (written into a part) into the whole trace's.
void Accumulate(const TimelineSummary& part, TimelineSummary* into) {
  into->ranks_written += part.ranks_written;
  into->host_slices += part.host_slices;
  into->device_slices += part.device_slices;
  into->open_slices += part.open_slices;
  into->verdict_marks += part.verdict_marks;
}

constexpr const char* kDescription =
    "ncclscope timeline. One process per rank (global rank as pid): a track per host thread "
    "with a slice per NCCL call (entry to return), a track per communicator x CUDA stream with a "
    "slice per operation's device execution (from its kernel start as the profiler saw it, else "
    "from when the call was made and the stream was free, to its device completion as the host "
    "observed it), an operations-in-flight counter, and the verdicts naming the rank. Arrows join "
    "one collective's device slices across ranks and a send with its receive. Slices that never "
    "ended are open. Times: CLOCK_REALTIME of each host, from each ring file's "
    "(realtime, monotonic) pair; see clock_* in the metadata for how well hosts agree.";

}  // namespace

uint64_t CollectiveFlowId(uint64_t comm_id, uint64_t seq) {
  const uint64_t id = Mix(comm_id ^ Mix(seq ^ 0xC011EC7ull));
  return id == 0 ? 1 : id;
}

uint64_t P2pFlowId(uint64_t comm_id, int from, int to, uint64_t seq) {
  const uint64_t ends =
      (static_cast<uint64_t>(static_cast<uint32_t>(from)) << 32) | static_cast<uint32_t>(to);
  const uint64_t id = Mix(comm_id ^ Mix(seq ^ Mix(ends)));
  return id == 0 ? 1 : id;
}

bool WriteTimeline(RingSource& source, const TimelineOptions& options, TimelineSink* sink,
                   TimelineSummary* summary, std::string* error) {
  std::string list_error;
  const std::vector<std::string> names = source.List(&list_error);
  if (names.empty()) {
    *error = list_error.empty() ? "no ring file (*.ring)" : list_error;
    return false;
  }
  // Headers first: which files, in what order, and the trace's origin, before any event.
  std::vector<FileEntry> files;
  for (const std::string& name : names) {
    RingInfo info;
    trace::RingHeaderCollector header(&info);
    std::string why;
    if (!source.Visit(name, std::numeric_limits<uint64_t>::max(), &header, &why)) {
      summary->errors.push_back(why);
      continue;
    }
    ++summary->files;
    if (info.global_rank >= 0 && !RankSelected(options, info.global_rank)) continue;
    if (info.global_rank < 0 && !options.ranks.empty()) continue;
    if (!options.comm.empty() &&
        std::none_of(info.comms.begin(), info.comms.end(),
                     [&](const trace::CommInfo& c) { return CommMatches(c, options.comm); })) {
      continue;
    }
    files.push_back({name, info, WallOffset(info)});
  }
  if (files.empty()) {
    if (summary->files == 0) {
      *error = "no readable ring file" +
               (summary->errors.empty() ? std::string() : ": " + summary->errors.front());
    } else if (!options.comm.empty()) {
      *error = "no selected rank has a communicator named '" + options.comm + "'";
    } else {
      *error = "no ring file of the selected ranks";
    }
    return false;
  }
  // Ranks in order, files without one last. The first rank's host is the clock reference: its
  // files are read first so that the others can be compared with its collectives.
  std::stable_sort(files.begin(), files.end(), [](const FileEntry& a, const FileEntry& b) {
    const int ra = a.info.global_rank < 0 ? INT32_MAX : a.info.global_rank;
    const int rb = b.info.global_rank < 0 ? INT32_MAX : b.info.global_rank;
    return ra != rb ? ra < rb : a.info.pid < b.info.pid;
  });
  const std::string reference_host = files.front().info.host;
  const bool several_hosts = std::any_of(files.begin(), files.end(), [&](const FileEntry& f) {
    return f.info.host != reference_host;
  });
  std::stable_partition(files.begin(), files.end(),
                        [&](const FileEntry& f) { return f.info.host == reference_host; });
  int64_t origin = INT64_MAX;
  for (const FileEntry& f : files) origin = std::min(origin, f.info.start_realtime_ns);
  std::pair<int64_t, int64_t> window = {INT64_MIN, INT64_MAX};
  if (!options.around_comm.empty()) {
    if (!AroundWindow(source, files, options, &window, error)) return false;
  } else {
    if (options.from_s) window.first = origin + static_cast<int64_t>(*options.from_s * 1e9);
    if (options.to_s) window.second = origin + static_cast<int64_t>(*options.to_s * 1e9);
  }
  sink->Begin(origin, kDescription);

  const auto marks = MarksByRank(options.analysis);
  static const std::vector<Mark> kNoMarks;
  auto marks_of = [&](const FileEntry& f) -> const std::vector<Mark>& {
    const auto m = marks.find(f.info.global_rank);
    return m == marks.end() ? kNoMarks : m->second;
  };
  std::vector<std::unordered_set<uint64_t>> wanted(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    for (const Mark& mark : marks_of(files[i])) {
      if (mark.record_index) wanted[i].insert(*mark.record_index);
    }
  }
  // Files are read (mapped, copied, indexed) on threads of their own, kDepth at a time. When the
  // sink can take parts (Perfetto), each thread also writes its rank into a part of its own and
  // this thread appends the parts in file order; otherwise (JSON) this thread writes every rank
  // while the next files are read. Memory stays a few files' records whatever the job's size.
  struct FileWork {
    std::unique_ptr<FileRecords> records;
    bool ok = false;
    std::string why;
    std::unique_ptr<TimelineSink> part;  // null: this thread writes the rank
    TimelineSummary summary;
  };
  auto work = [&](size_t i, std::unique_ptr<TimelineSink> part) {
    FileWork w;
    w.records = std::make_unique<FileRecords>(&wanted[i]);
    w.ok = source.Visit(files[i].name, 0, w.records.get(), &w.why);
    if (w.ok && part != nullptr) {
      RankWriter(files[i], *w.records, i, options, window, marks_of(files[i]), part.get(),
                 &w.summary)
          .Write();
    }
    w.part = std::move(part);
    return w;
  };
  constexpr size_t kDepth = 2;  // this machine's cores; more only adds memory
  std::deque<std::future<FileWork>> in_flight;
  size_t launched = 0;
  auto top_up = [&] {
    while (launched < files.size() && in_flight.size() < kDepth) {
      in_flight.push_back(std::async(std::launch::async, work, launched, sink->NewPart()));
      ++launched;
    }
  };
  ClockBound bound;
  top_up();
  for (size_t i = 0; i < files.size(); ++i) {
    FileWork w = in_flight.front().get();
    in_flight.pop_front();
    top_up();
    const FileEntry& f = files[i];
    if (!w.ok) {
      summary->errors.push_back(w.why);  // gone or damaged since its header was read
      continue;
    }
    // One host: every rank shares its clock, nothing to bound.
    if (several_hosts) AddToClockBound(f, *w.records, f.info.host == reference_host, &bound);
    if (w.part != nullptr) {
      sink->AppendPart(w.part.get());
      Accumulate(w.summary, summary);
    } else {
      RankWriter(f, *w.records, i, options, window, marks_of(f), sink, summary).Write();
    }
  }

  const ClockBound::Result clocks = bound.Get();
  summary->clock_reference_host = reference_host;
  summary->clock_hosts = clocks.hosts + 1;
  summary->clock_bounded_hosts = clocks.bounded_hosts;
  summary->clock_bound_ns = clocks.max_bound_ns;
  const std::string clock_note =
      clocks.hosts == 0
          ? "one host: every rank shares its clock"
          : fmt::format(
                "{} of {} other hosts bounded against {} by shared collectives; the "
                "largest bound is {} ns ({}){}",
                clocks.bounded_hosts, clocks.hosts, reference_host, clocks.max_bound_ns,
                clocks.worst_host.empty() ? "none" : clocks.worst_host,
                clocks.bounded_hosts < clocks.hosts
                    ? "; hosts not bounded shared no completed collective with it"
                    : "");
  const std::string window_note =
      window.first == INT64_MIN && window.second == INT64_MAX
          ? std::string("whole job")
          : fmt::format(
                "{:.6f} s to {:.6f} s after the origin{}",
                window.first == INT64_MIN ? 0.0 : (window.first - origin) * 1e-9,
                window.second == INT64_MAX ? -1.0 : (window.second - origin) * 1e-9,
                options.around_comm.empty()
                    ? std::string()
                    : fmt::format(" (around #{} of {})", options.around_seq, options.around_comm));
  const std::vector<Arg> details = {
      Arg::Int("files", static_cast<int64_t>(summary->files)),
      Arg::Int("ranks", static_cast<int64_t>(summary->ranks_written)),
      Arg::Int("unreadable_files", static_cast<int64_t>(summary->errors.size())),
      Arg::Str("clock_reference_host", reference_host),
      Arg::Int("clock_hosts", summary->clock_hosts),
      Arg::Int("clock_bounded_hosts", clocks.bounded_hosts),
      Arg::Int("clock_bound_ns", clocks.max_bound_ns),
      Arg::Str("clock_alignment", clock_note),
      Arg::Str("comm_filter", options.comm),
      Arg::Str("window", window_note),
  };
  return sink->Finish(details, error);
}

}  // namespace ncclscope::exporters::timeline
