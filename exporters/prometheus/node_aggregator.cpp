#include "exporters/prometheus/node_aggregator.h"

#include <algorithm>
#include <iostream>
#include <vector>

#include "exporters/measures/operation_size.h"
#include "exporters/measures/size_classes.h"
#include "exporters/prometheus/verdict_stages.h"
#include "exporters/sources/file_tail.h"
#include "trace/clock.h"
#include "trace/numerics_record.h"
#include "trace/record.h"
#include "trace/ring_layout.h"

namespace ncclscope::exporters {
namespace {

struct OpTotals {
  uint64_t operations = 0;
  uint64_t bytes = 0;
  uint64_t accelerated = 0;  // run by ncclscope's own kernels (trace::kFlagAccelerated)
};

struct NumericsTotals {
  uint64_t samples = 0;
  uint64_t nonfinite_inputs = 0;
};

struct PhaseTotals {
  uint64_t operations = 0;
  double seconds = 0;
};

struct CommProgress {
  uint64_t last_issued_seq = 0;
  uint64_t last_completed_seq = 0;
  int64_t inflight = 0;
};

// NCCL accepted the call: ncclSuccess, or ncclInProgress on a non-blocking communicator.
std::string Known(int value) {
  return value >= 0 ? std::to_string(value) : std::string();
}

}  // namespace

// One ring file: its tail reader and everything counted from it.
class NodeAggregator::FileState final : public TailEvents {
 public:
  FileState(NodeAggregator* node, uint32_t id) : node_(node), id_(id) {}

  uint32_t id() const { return id_; }
  FileTail& tail() { return tail_; }
  const trace::RingInfo& info() const { return info_; }
  const std::map<std::pair<uint64_t, uint32_t>, OpTotals>& ops() const { return ops_; }
  const std::map<uint64_t, CommProgress>& comms() const { return comms_; }
  const std::map<std::pair<uint64_t, uint16_t>, PhaseTotals>& phases() const { return phases_; }
  const std::map<uint64_t, uint64_t>& accel_stalls() const { return accel_stalls_; }
  const std::map<uint64_t, NumericsTotals>& numerics() const { return numerics_; }
  const FileNvtx& nvtx() const { return nvtx_; }
  int64_t last_done_ns() const { return last_done_ns_; }
  int64_t heartbeat_moved_at() const { return heartbeat_moved_at_; }
  bool readable() const { return readable_; }
  void set_readable(bool readable) { readable_ = readable; }

  void Reset() override {
    cache_ = {};
    ops_.clear();
    comms_.clear();
    stream_starts_.Clear();
    phases_.clear();
    accel_stalls_.clear();
    numerics_.clear();
    nvtx_.Reset();
    last_done_ns_ = 0;
  }

  void Header(const trace::RingInfo& info) override {
    if (info.heartbeat_monotonic_ns != info_.heartbeat_monotonic_ns || heartbeat_moved_at_ == 0) {
      heartbeat_moved_at_ = node_->now_ns_;
    }
    info_ = info;
    cache_ = {};  // communicator sizes may have changed
    for (const trace::CommInfo& c : info_.comms) {
      comms_.try_emplace(c.id);
      if (!c.name.empty()) node_->comm_names_.try_emplace(c.id, c.name);
      if (c.nranks > 0) node_->comm_ranks_[c.id] = c.nranks;
    }
  }

  void Issued(const trace::StoredRecord& record) override {
    const trace::RecordData& r = record.data;
    nvtx_.Issued(r.reserved);  // a call NCCL refused was still made in its step
    if (!WasEnqueued(r)) return;
    Entry& e = Lookup(r.comm_id, r.op);
    const uint64_t bytes = OperationBytes(r, e.nranks);
    ++e.totals->operations;
    e.totals->bytes += bytes;
    if ((r.flags & trace::kFlagAccelerated) != 0) ++e.totals->accelerated;
    e.histograms->size_bytes.Observe(static_cast<double>(bytes), node_->size_bounds_);
    CommProgress& c = *e.progress;
    if (trace::IsCollective(static_cast<trace::OpType>(r.op))) {
      c.last_issued_seq = std::max(c.last_issued_seq, r.seq);
    }
    if (trace::IsPending(r.t_device_done_ns)) ++c.inflight;
  }

  void Completed(const trace::StoredRecord& record, bool was_pending) override {
    const trace::RecordData& r = record.data;
    if (!WasEnqueued(r)) {
      CommProgress& c = comms_[r.comm_id];
      if (was_pending && c.inflight > 0) --c.inflight;
      return;
    }
    Entry& e = Lookup(r.comm_id, r.op);
    CommProgress& c = *e.progress;
    if (was_pending && c.inflight > 0) --c.inflight;
    const int64_t done = r.t_device_done_ns;
    last_done_ns_ = std::max(last_done_ns_, done);
    const double duration_s = OperationSeconds(r);
    e.histograms->duration_s.Observe(duration_s, node_->duration_bounds_);
    e.histograms->duration_by_size_s[SizeClassOf(OperationBytes(r, e.nranks))].Observe(
        duration_s, node_->duration_by_size_bounds_);
    // Calls of one (comm, op) come in runs of one phase: the map is searched when it changes.
    const uint16_t label = nvtx_.PhaseOf(r.reserved, &node_->phase_labels_);
    if (e.phase == nullptr || e.phase_label != label) {
      e.phase = &phases_[{r.comm_id, label}];
      e.phase_label = label;
    }
    ++e.phase->operations;
    e.phase->seconds += duration_s;
    const int64_t start = stream_starts_.StartOf(r);
    if (trace::IsCollective(static_cast<trace::OpType>(r.op)) && r.seq > 0) {
      c.last_completed_seq = std::max(c.last_completed_seq, r.seq);
      node_->lateness_.Completed(r.comm_id, r.seq, id_,
                                 static_cast<double>(done - start) / trace::kNsPerS, duration_s);
    }
  }

  void Abandoned(const trace::StoredRecord& record) override {
    CommProgress& c = comms_[record.data.comm_id];
    if (c.inflight > 0) --c.inflight;
  }

  void NvtxName(const trace::StoredRecord& record) override { nvtx_.Name(record.data); }

  void AccelStall(const trace::StoredRecord& record) override {
    ++accel_stalls_[record.data.comm_id];
  }

  void Numerics(const trace::StoredRecord& record) override {
    const trace::NumericsSample s = trace::DecodeNumerics(record.data);
    NumericsTotals& t = numerics_[s.comm_id];
    ++t.samples;
    if (s.Poisoned()) ++t.nonfinite_inputs;
  }

 private:
  NodeAggregator* node_;
  uint32_t id_;
  FileTail tail_;
  trace::RingInfo info_;
  std::map<std::pair<uint64_t, uint32_t>, OpTotals> ops_;
  std::map<uint64_t, CommProgress> comms_;
  std::map<uint64_t, uint64_t> accel_stalls_;    // accel_stall records by comm id
  std::map<uint64_t, NumericsTotals> numerics_;  // numerics records by comm id
  StreamStarts stream_starts_;
  FileNvtx nvtx_;
  // Completed operations by (comm id, phase label), counted from the start whether or not the
  // file carries contexts yet, so the series a file gets once it does hold all of its operations.
  std::map<std::pair<uint64_t, uint16_t>, PhaseTotals> phases_;
  // Where the records of one (comm, op) are counted, so that thousands of records per scrape
  // search the maps once per (comm, op) and poll, not once each (docs/performance.md). Map nodes
  // stay put; Reset clears the maps and the cache, Header the cache (nranks may change).
  struct Entry {
    uint64_t comm = 0;
    uint32_t op = 0;
    bool valid = false;
    int nranks = 1;
    OpTotals* totals = nullptr;
    OpHistograms* histograms = nullptr;
    CommProgress* progress = nullptr;
    uint16_t phase_label = 0;  // the phase label `phase` counts, when set
    PhaseTotals* phase = nullptr;
  };
  Entry& Lookup(uint64_t comm, uint32_t op) {
    Entry& e = cache_[(comm * 0x9E3779B97F4A7C15ULL + op) >> (64 - kCacheBits)];
    if (e.valid && e.comm == comm && e.op == op) return e;
    e = {comm,
         op,
         true,
         node_->CommRanks(comm),
         &ops_[{comm, op}],
         &node_->histograms_[{comm, op}],
         &comms_[comm],
         0,
         nullptr};
    return e;
  }
  static constexpr int kCacheBits = 6;
  std::array<Entry, size_t{1} << kCacheBits> cache_{};
  int64_t last_done_ns_ = 0;
  int64_t heartbeat_moved_at_ = 0;
  bool readable_ = false;  // the last read succeeded
};

NodeAggregator::NodeAggregator(RingSource* source, AggregatorOptions options)
    : source_(source), options_(std::move(options)), labels_(options_.max_comm_labels) {}

NodeAggregator::~NodeAggregator() = default;

void NodeAggregator::Refresh(int64_t now_monotonic_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  now_ns_ = now_monotonic_ns;
  std::string error;
  const std::vector<std::string> names = source_->List(&error);
  if (!error.empty() && options_.log_errors && logged_errors_.insert(error).second) {
    std::cerr << "ncclscope exporter: " << error << "\n";
  }
  // Files that are gone take their state with them: their job's files were removed.
  for (auto it = files_.begin(); it != files_.end();) {
    if (std::binary_search(names.begin(), names.end(), it->first)) {
      ++it;
      continue;
    }
    logged_errors_.erase(it->first);
    lateness_.ForgetMember(it->second->id());
    it = files_.erase(it);
  }
  for (const std::string& name : names) {
    auto& state = files_[name];
    if (state == nullptr) state = std::make_unique<FileState>(this, next_file_id_++);
    std::string read_error;
    state->set_readable(state->tail().Poll(*source_, name, now_ns_, state.get(), &read_error));
    if (!state->readable()) {
      ++read_errors_;
      // Once per file (not per message: a file's error text may change from scrape to scrape).
      if (options_.log_errors && logged_errors_.insert(name).second) {
        std::cerr << "ncclscope exporter: " << read_error << "\n";
      }
    }
  }
  // Who is a member of what, as far as this node sees: a collective is complete for the lateness
  // once every visible member completed it.
  std::unordered_map<uint64_t, std::vector<uint32_t>> members;
  for (const auto& [name, f] : files_) {
    for (const trace::CommInfo& c : f->info().comms) members[c.id].push_back(f->id());
  }
  for (auto& [comm, ids] : members) lateness_.SetMembers(comm, std::move(ids));
  lateness_.Settle();
}

const std::string& NodeAggregator::CommLabel(uint64_t comm_id) {
  const auto it = comm_names_.find(comm_id);
  return labels_.Label(comm_id == 0 || it == comm_names_.end() ? std::string(kUnknownComm)
                                                               : it->second);
}

int NodeAggregator::CommRanks(uint64_t comm_id) const {
  const auto it = comm_ranks_.find(comm_id);
  return it == comm_ranks_.end() ? 1 : it->second;
}

FileView NodeAggregator::ViewOf(FileState& f) {
  const trace::RingInfo& info = f.info();
  FileView v;
  v.rank = info.global_rank >= 0 ? std::to_string(info.global_rank) : "unknown";
  v.local_rank = Known(info.local_rank);
  v.world_size = Known(info.world_size);
  v.host = info.host;
  v.gpu_uuid = info.gpu_uuid;
  v.job_id = info.job_id;
  v.start_realtime_ns = info.start_realtime_ns;
  if ((info.flags & trace::kHeaderFinished) != 0) {
    v.up = false;
  } else if (options_.probe != nullptr && info.host == options_.probe->ThisHost()) {
    v.up = options_.probe->State(info.pid) != hang_detector::ProcessState::kGone;
  } else {
    v.up = static_cast<double>(now_ns_ - f.heartbeat_moved_at()) <
           options_.stale_heartbeat_s * trace::kNsPerS;
  }
  if (f.last_done_ns() > 0) {
    v.last_progress_s =
        static_cast<double>(info.start_realtime_ns + (f.last_done_ns() - info.start_monotonic_ns)) /
        trace::kNsPerS;
  }
  // Stall rows by label (several communicators can share one), at 0 for every label with an
  // operation on ncclscope's kernels.
  std::map<std::string, uint64_t> stalls;
  for (const auto& [key, totals] : f.ops()) {
    v.ops.push_back({CommLabel(key.first),
                     trace::OpTypeName(static_cast<trace::OpType>(key.second)), totals.operations,
                     totals.bytes, totals.accelerated});
    if (totals.accelerated > 0) stalls.try_emplace(v.ops.back().comm, 0);
  }
  for (const auto& [comm, n] : f.accel_stalls()) stalls[CommLabel(comm)] += n;
  for (const auto& [comm, n] : stalls) v.accel_stalls.push_back({comm, n});
  // By label, like the stalls: several communicators can share one.
  std::map<std::string, NumericsTotals> numerics;
  for (const auto& [comm, t] : f.numerics()) {
    NumericsTotals& sum = numerics[CommLabel(comm)];
    sum.samples += t.samples;
    sum.nonfinite_inputs += t.nonfinite_inputs;
  }
  for (const auto& [comm, t] : numerics) {
    v.numerics.push_back({comm, t.samples, t.nonfinite_inputs});
  }
  v.numerics_skipped = info.numerics_skipped;
  for (const auto& [comm, progress] : f.comms()) {
    const Lateness late = lateness_.Of(comm, f.id());
    v.comms.push_back({CommLabel(comm), progress.last_issued_seq, progress.last_completed_seq,
                       progress.inflight, late.seconds, late.score});
  }
  if (f.nvtx().has_context()) {
    for (const auto& [key, totals] : f.phases()) {
      v.phases.push_back({CommLabel(key.first), phase_labels_.Label(key.second), totals.operations,
                          totals.seconds});
    }
  }
  v.step = f.nvtx().step();
  const uint64_t lost[kLostReasonCount] = {info.overwritten, info.dropped_records,
                                           info.dropped_comms, info.untracked_completions,
                                           info.unknown_comm_records};
  std::copy(std::begin(lost), std::end(lost), std::begin(v.lost));
  return v;
}

NodeView NodeAggregator::View(const hang_detector::Analysis* analysis) {
  std::lock_guard<std::mutex> lock(mutex_);
  NodeView view;
  view.version = options_.version;
  for (const auto& [name, f] : files_) view.ring_files += f->readable() ? 1 : 0;
  view.read_errors = read_errors_;
  // Labels are handed out in file and comm table order, so the first scrape of a job keeps the
  // names of its first communicators.
  for (const auto& [name, f] : files_) {
    for (const trace::CommInfo& c : f->info().comms) CommLabel(c.id);
  }
  for (const auto& [name, f] : files_) {
    if (!f->tail().seen()) continue;  // never read: no rank to show
    view.files.push_back(ViewOf(*f));
    view.missed_overwritten += f->tail().missed();
    view.missed_torn += f->tail().torn();
  }
  std::stable_sort(view.files.begin(), view.files.end(), [](const FileView& a, const FileView& b) {
    return a.start_realtime_ns < b.start_realtime_ns;
  });
  for (const auto& [key, h] : histograms_) {
    view.histograms.push_back({CommLabel(key.first),
                               trace::OpTypeName(static_cast<trace::OpType>(key.second)),
                               h.duration_s, h.size_bytes, h.duration_by_size_s});
  }
  for (const auto& [comm, nranks] : comm_ranks_)
    view.comm_ranks.emplace_back(CommLabel(comm), nranks);
  if (analysis != nullptr) {
    AddVerdictRows(*analysis, &view.verdicts);
    view.ranks_seen = analysis->input.ranks_seen;
    view.world_size = analysis->input.world_size;
  }
  return view;
}

std::vector<VerdictRow> NodeAggregator::VerdictRows(const hang_detector::Analysis& analysis) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<VerdictRow> rows;
  AddVerdictRows(analysis, &rows);
  return rows;
}

void NodeAggregator::AddVerdictRows(const hang_detector::Analysis& analysis,
                                    std::vector<VerdictRow>* out) {
  for (const hang_detector::Verdict& v : analysis.verdicts) {
    if (v.cls == hang_detector::VerdictClass::kHealthy) continue;
    std::string comm;
    if (comm_names_.count(v.comm_id) != 0) {
      comm = CommLabel(v.comm_id);
    } else if (!v.comm_name.empty()) {
      comm = labels_.Label(v.comm_name);
    }
    const std::string cls = hang_detector::VerdictClassName(v.cls);
    const std::string stage = StageLabel(v);
    const double confirm_after_s = hang_detector::IsSuspect(v) ? v.confirm_after_s : 0;
    if (v.culprits.empty()) out->push_back({cls, comm, "", stage, v.since_s, confirm_after_s});
    for (int rank : v.culprits) {
      out->push_back({cls, comm, std::to_string(rank), stage, v.since_s, confirm_after_s});
    }
  }
}

}  // namespace ncclscope::exporters
