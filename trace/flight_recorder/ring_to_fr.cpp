#include "trace/flight_recorder/ring_to_fr.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "trace/flight_recorder/fr_dump_versions.h"
#include "trace/flight_recorder/fr_names.h"

namespace ncclscope::exporters::fr {
namespace {

using flight_recorder::FrDump;
using flight_recorder::FrEntry;
using flight_recorder::FrState;
using flight_recorder::FrVersion;
using trace::OpType;
using trace::RecordData;

constexpr FrVersion kPerOpCollectivesInGroups{2, 7};  // pytorch/pytorch#151238

OpType OpOf(const RecordData& r) {
  return static_cast<OpType>(r.op);
}

bool IsOperation(const RecordData& r) {
  return r.seq > 0 && (trace::IsCollective(OpOf(r)) || trace::IsP2P(OpOf(r)));
}

bool IsGrouped(const RecordData& r) {
  return (r.flags & trace::kFlagInGroup) != 0 && r.group_id != 0;
}

// Counts and times come from files anyone could have written: arithmetic saturates instead of
// overflowing.
int64_t Saturated(uint64_t v) {
  return static_cast<int64_t>(std::min<uint64_t>(v, INT64_MAX));
}
int64_t Times(int64_t count, int64_t nranks) {
  int64_t out = 0;
  return __builtin_mul_overflow(count, nranks, &out) ? INT64_MAX : out;
}

// Input and output shapes as the torch call that issued this NCCL call would have recorded them.
void Sizes(OpType op, int64_t count, int64_t nranks, FrEntry* e) {
  int64_t in = count;
  int64_t out = count;
  switch (op) {
    case OpType::kAllGather:
    case OpType::kGather:
      out = Times(count, nranks);
      break;
    case OpType::kReduceScatter:
    case OpType::kScatter:
      in = Times(count, nranks);
      break;
    case OpType::kAlltoAll:
      in = out = Times(count, nranks);
      break;
    default:
      break;
  }
  e->input_sizes = {{in}};
  e->output_sizes = {{out}};
}

// What became of one operation (or one coalesced group), on the ring's own clock; 0: unknown.
struct Outcome {
  int64_t start = 0;
  int64_t done = 0;
};

struct GroupInfo {
  size_t last_pos = 0;
  bool has_collective = false;
  bool has_p2p = false;
  bool opened = false;
  int64_t first_enter = 0;
  int64_t last_enter = 0;
  uint32_t tid = 0;
  Outcome outcome;
  bool all_done = true;
};

struct PgState {
  const JobGroup* group = nullptr;
  int64_t pg_id = 0;
  int comm_rank = -1;
  int nranks = 0;
  int64_t coll_seq = 0;
  int64_t p2p_seq = 0;
  int64_t op_id = 0;
  bool coll_base_set = false;
  int64_t last_enqueued = -1;
  int64_t last_started = -1;
  int64_t last_completed = -1;
};

class RankConverter {
 public:
  RankConverter(const trace::RingSnapshot& file, const JobGroups& groups,
                const FrExportOptions& options)
      : file_(file), groups_(groups), options_(options) {
    version_ = flight_recorder::ParseFrVersion(options.version).value_or(FrVersion{2, 10});
  }

  FrDump Run() {
    FrDump dump;
    dump.version = options_.version;
    dump.comm_lib_version = CommLibVersion(file_.nccl_version);
    OpenGroups(&dump);
    IndexStarts();
    IndexCompletions();
    IndexGroups();
    const auto& records = file_.records;
    for (size_t pos = 0; pos < records.size(); ++pos) {
      const RecordData& r = records[pos].data;
      if (!IsOperation(r)) continue;
      const auto pit = pgs_.find(r.comm_id);
      if (pit == pgs_.end()) continue;  // a communicator no pg_config entry describes
      if (IsGrouped(r)) {
        Grouped(pit->second, r, pos);
      } else {
        Single(pit->second, r, pos);
      }
    }
    Status(&dump);
    if (entries_.size() > options_.buffer_size) {
      entries_.erase(entries_.begin(),
                     entries_.end() - static_cast<ptrdiff_t>(options_.buffer_size));
    }
    dump.entries = std::move(entries_);
    return dump;
  }

 private:
  // 0 when the header's clock pair cannot place the time (a damaged file).
  int64_t Wall(int64_t monotonic_ns) const {
    int64_t since = 0;
    int64_t wall = 0;
    if (__builtin_sub_overflow(monotonic_ns, file_.start_monotonic_ns, &since) ||
        __builtin_add_overflow(since, file_.start_realtime_ns, &wall)) {
      return 0;
    }
    return wall;
  }

  void OpenGroups(FrDump* dump) {
    for (size_t k = 0; k < file_.comms.size(); ++k) {
      const trace::CommInfo& c = file_.comms[k];
      const auto git = groups_.by_comm.find(c.id);
      if (git == groups_.by_comm.end() || pgs_.count(c.id) != 0 || c.rank < 0) continue;
      PgState& s = pgs_[c.id];
      s.group = &groups_.groups[git->second];
      s.pg_id = static_cast<int64_t>(k);
      s.comm_rank = c.rank;
      s.nranks = c.nranks;
      pg_order_.push_back(c.id);
      dump->pg_config.push_back({s.group->name, s.group->name, s.group->desc, s.group->ranks});
    }
  }

  void IndexStarts() {
    for (const trace::StoredRecord& s : file_.records) {
      const RecordData& r = s.data;
      if (r.seq == 0) continue;  // a start the probe could not number
      if (OpOf(r) == OpType::kDeviceStart) {
        Earliest(&coll_starts_[{r.comm_id, r.seq}], r.t_enter_ns);
      } else if (OpOf(r) == OpType::kP2pDeviceStart) {
        Earliest(&p2p_starts_[{r.comm_id, r.seq, r.peer, r.redop}], r.t_enter_ns);
      }
    }
  }

  static void Earliest(int64_t* slot, int64_t t) {
    if (*slot == 0 || t < *slot) *slot = t;
  }

  // For an untracked completion: the completion time of the nearest later record that completed.
  void IndexCompletions() {
    const auto& records = file_.records;
    next_done_.assign(records.size(), 0);
    int64_t later = 0;
    for (size_t i = records.size(); i-- > 0;) {
      next_done_[i] = later;
      if (records[i].data.t_device_done_ns > 0) later = records[i].data.t_device_done_ns;
    }
  }

  Outcome OutcomeOf(const RecordData& r, size_t pos) const {
    Outcome o;
    if (r.t_device_done_ns > 0) {
      o.done = r.t_device_done_ns;
    } else if (r.t_device_done_ns == trace::kDoneUntracked) {
      o.done = next_done_[pos];
    }
    if (trace::IsP2P(OpOf(r))) {
      const auto it = p2p_starts_.find({r.comm_id, r.seq, r.peer, static_cast<int32_t>(r.op)});
      if (it != p2p_starts_.end()) o.start = it->second;
    } else {
      const auto it = coll_starts_.find({r.comm_id, r.seq});
      if (it != coll_starts_.end()) o.start = it->second;
    }
    return o;
  }

  void IndexGroups() {
    const auto& records = file_.records;
    for (size_t pos = 0; pos < records.size(); ++pos) {
      const RecordData& r = records[pos].data;
      if (!IsOperation(r) || !IsGrouped(r)) continue;
      GroupInfo& g = groups_seen_[{r.comm_id, r.group_id}];
      const Outcome o = OutcomeOf(r, pos);
      if (g.first_enter == 0) g.first_enter = r.t_enter_ns;
      g.last_pos = pos;
      g.last_enter = r.t_enter_ns;
      g.tid = r.tid;
      (trace::IsP2P(OpOf(r)) ? g.has_p2p : g.has_collective) = true;
      if (o.done > 0) {
        g.outcome.done = std::max(g.outcome.done, o.done);
      } else {
        g.all_done = false;
      }
      if (o.start > 0) Earliest(&g.outcome.start, o.start);
    }
    for (auto& [key, g] : groups_seen_) {
      if (!g.all_done) g.outcome.done = 0;
    }
  }

  FrEntry Base(PgState& pg, const RecordData& r) {
    FrEntry e;
    e.record_id = next_record_id_++;
    e.pg_id = pg.pg_id;
    e.pg_name = pg.group->name;
    e.pg_desc = pg.group->desc;
    e.collective_seq_id = pg.coll_seq;
    e.p2p_seq_id = pg.p2p_seq;
    e.op_id = pg.op_id;
    e.time_created_ns = Wall(r.t_enter_ns);
    e.timeout_ms = kTorchNcclTimeoutMs;
    if (version_ >= flight_recorder::fr_versions::kCommLibAndThreads) {
      e.thread_id = std::to_string(r.tid);
      e.thread_name = "pt_main_thread";
    }
    return e;
  }

  void Describe(const PgState& pg, const RecordData& r, FrEntry* e) const {
    const OpType op = OpOf(r);
    e->profiling_name = flight_recorder::ProfilingNameOf(op, pg.comm_rank, r.peer);
    Sizes(op, Saturated(r.count), pg.nranks, e);
    const std::string dtype = flight_recorder::TorchNameOfNcclDtype(r.dtype);
    e->input_dtypes = {dtype};
    e->output_dtypes = {dtype};
    e->is_p2p = trace::IsP2P(op);
  }

  void SetOutcome(const Outcome& o, FrEntry* e) {
    if (o.done > 0) {
      e->state = FrState::kCompleted;
      e->time_discovered_completed_ns = Wall(o.done);
      e->retired = true;
    } else if (o.start > 0) {
      e->state = FrState::kStarted;
    }
    if (o.start > 0) {
      e->time_discovered_started_ns = Wall(o.start);
      any_start_ = true;
    }
    if (o.start > 0 && o.done > 0) {
      e->duration_ms = (static_cast<double>(o.done) - static_cast<double>(o.start)) / 1e6;
    }
  }

  // A collective moves its group's counter; the first one retained sets where counting starts.
  void CountCollective(PgState& pg, const RecordData& r) {
    if (!pg.coll_base_set) {
      pg.coll_seq = Saturated(std::min<uint64_t>(r.seq, INT64_MAX / 2)) - 1;
      pg.coll_base_set = true;
    }
    ++pg.coll_seq;
  }

  void NoteCollective(PgState& pg, const Outcome& o) {
    pg.last_enqueued = pg.coll_seq;
    if (o.done > 0) pg.last_completed = pg.coll_seq;
    if (o.start > 0) pg.last_started = pg.coll_seq;
  }

  void Single(PgState& pg, const RecordData& r, size_t pos) {
    const bool p2p = trace::IsP2P(OpOf(r));
    if (p2p) {
      ++pg.p2p_seq;
    } else {
      CountCollective(pg, r);
    }
    ++pg.op_id;
    FrEntry e = Base(pg, r);
    Describe(pg, r, &e);
    const Outcome o = OutcomeOf(r, pos);
    SetOutcome(o, &e);
    if (!p2p) NoteCollective(pg, o);
    entries_.push_back(std::move(e));
  }

  void Grouped(PgState& pg, const RecordData& r, size_t pos) {
    GroupInfo& g = groups_seen_.at({r.comm_id, r.group_id});
    const bool p2p = trace::IsP2P(OpOf(r));
    if (!g.opened) {
      // torch bumps the counters once, when the coalescing region starts (startCoalescing).
      g.opened = true;
      if (g.has_collective) CountCollective(pg, r);
      if (g.has_p2p) ++pg.p2p_seq;
    }
    ++pg.op_id;
    if (p2p || version_ >= kPerOpCollectivesInGroups) {
      FrEntry e = Base(pg, r);
      Describe(pg, r, &e);
      entries_.push_back(std::move(e));  // null events: scheduled for ever, no times
    }
    if (pos != g.last_pos) return;
    FrEntry close = Base(pg, r);
    close.time_created_ns = Wall(g.last_enter);
    close.profiling_name = "nccl:coalesced";
    close.is_p2p = g.has_p2p;
    SetOutcome(g.outcome, &close);
    if (g.has_collective) NoteCollective(pg, g.outcome);
    entries_.push_back(std::move(close));
  }

  void Status(FrDump* dump) const {
    for (uint64_t id : pg_order_) {
      const PgState& s = pgs_.at(id);
      flight_recorder::FrPgStatus st;
      st.pg_id = std::to_string(s.pg_id);
      st.last_enqueued_collective = s.last_enqueued;
      st.last_completed_collective = s.last_completed;
      st.last_started_collective = any_start_ ? s.last_started : -1;
      dump->pg_status.push_back(st);
    }
  }

  const trace::RingSnapshot& file_;
  const JobGroups& groups_;
  const FrExportOptions& options_;
  FrVersion version_;
  std::map<uint64_t, PgState> pgs_;
  std::vector<uint64_t> pg_order_;
  std::map<std::pair<uint64_t, uint64_t>, int64_t> coll_starts_;
  std::map<std::tuple<uint64_t, uint64_t, int32_t, int32_t>, int64_t> p2p_starts_;
  std::vector<int64_t> next_done_;
  std::map<std::pair<uint64_t, uint64_t>, GroupInfo> groups_seen_;
  std::vector<FrEntry> entries_;
  int64_t next_record_id_ = 0;
  bool any_start_ = false;
};

}  // namespace

std::string CommLibVersion(uint32_t nccl_version) {
  if (nccl_version == 0) return "";
  const bool new_scheme = nccl_version >= 10000;  // NCCL_VERSION(2,9,0) = 20900 on
  const uint32_t major = new_scheme ? nccl_version / 10000 : nccl_version / 1000;
  const uint32_t minor = new_scheme ? nccl_version / 100 % 100 : nccl_version / 100 % 10;
  const uint32_t patch = nccl_version % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

FrDump DumpOfRank(const trace::RingSnapshot& file, const JobGroups& groups,
                  const FrExportOptions& options) {
  return RankConverter(file, groups, options).Run();
}

int64_t LastAliveWallNs(const trace::RingSnapshot& file) {
  if (file.start_realtime_ns <= 0) return 0;
  int64_t last = file.heartbeat_monotonic_ns;
  for (const trace::StoredRecord& r : file.records) {
    last = std::max({last, r.data.t_enter_ns, r.data.t_exit_ns,
                     r.data.t_device_done_ns > 0 ? r.data.t_device_done_ns : 0});
  }
  // In double: a damaged header's times may be any int64.
  const double wall = static_cast<double>(file.start_realtime_ns) +
                      (static_cast<double>(last) - static_cast<double>(file.start_monotonic_ns));
  return wall > 0 && wall < 9.0e18 ? static_cast<int64_t>(wall) : 0;
}

FrJobDumps DumpsOfJob(const std::vector<const trace::RingSnapshot*>& files,
                      const FrExportOptions& options) {
  FrJobDumps out;
  std::vector<const trace::RingSnapshot*> kept;
  std::set<int> ranks;
  for (const trace::RingSnapshot* f : files) {
    if (f->global_rank < 0) {
      out.notes.push_back(f->path + ": no global rank in its header; left out");
    } else if (!ranks.insert(f->global_rank).second) {
      out.notes.push_back(f->path + ": a second ring file of rank " +
                          std::to_string(f->global_rank) + "; left out");
    } else {
      kept.push_back(f);
    }
  }
  const JobGroups groups = GroupsOfJob(kept);
  out.notes.insert(out.notes.end(), groups.notes.begin(), groups.notes.end());
  std::sort(kept.begin(), kept.end(),
            [](const auto* a, const auto* b) { return a->global_rank < b->global_rank; });
  for (const trace::RingSnapshot* f : kept) {
    out.ranks.push_back(
        {f->global_rank, f->path, DumpOfRank(*f, groups, options), LastAliveWallNs(*f)});
  }
  return out;
}

}  // namespace ncclscope::exporters::fr
