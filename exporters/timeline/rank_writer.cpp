#include "exporters/timeline/rank_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>

#include "exporters/measures/operation_size.h"
#include "trace/nccl_names.h"

namespace ncclscope::exporters::timeline {

namespace {

// Track uuids: the metadata track is 1 (perfetto_writer.cpp); rank file i owns (i + 1) << 24 and
// the 2^24 uuids above it, one per track of that rank.
constexpr int kTrackBits = 24;

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

}  // namespace

void WriteRank(const FileEntry& file, const FileRecords& records, size_t file_index,
               const TimelineOptions& options, std::pair<int64_t, int64_t> window_ns,
               const std::vector<Mark>& marks, TimelineSink* sink, TimelineSummary* summary) {
  RankWriter(file, records, file_index, options, window_ns, marks, sink, summary).Write();
}

}  // namespace ncclscope::exporters::timeline
