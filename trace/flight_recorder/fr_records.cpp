#include "trace/flight_recorder/fr_records.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "trace/flight_recorder/fr_names.h"
#include "trace/ring_layout.h"

namespace ncclscope::flight_recorder {
namespace {

using trace::OpType;
using trace::RecordData;

uint64_t Fnv1a(uint64_t h, std::string_view bytes) {
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

// NCCL's version code (major * 10000 + minor * 100 + patch since 2.9) of "2.21.5"; 0 when the
// text is not three numbers.
uint32_t NcclVersionCode(std::string_view text) {
  uint32_t parts[3] = {0, 0, 0};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 3; ++i) {
    const auto [next, ec] = std::from_chars(p, end, parts[i]);
    if (ec != std::errc() || (i < 2 && (next == end || *next != '.'))) return 0;
    p = i < 2 ? next + 1 : next;
  }
  if (parts[1] > 99 || parts[2] > 99) return 0;
  return parts[0] * 10000 + parts[1] * 100 + parts[2];
}

// A time from the file as the records may carry it: wall-clock ns between 1970 and 2116; anything
// else (a damaged or hostile dump) reads as 0, unknown, so no reader's arithmetic on it overflows.
int64_t PlausibleTime(int64_t t) {
  return t > 0 && t < (int64_t{1} << 62) ? t : 0;
}

uint64_t Numel(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (const int64_t d : shape) n *= d > 0 ? static_cast<uint64_t>(d) : 0;
  return n;
}
uint64_t TotalNumel(const std::vector<std::vector<int64_t>>& tensors) {
  uint64_t n = 0;
  for (const auto& t : tensors) n += Numel(t);
  return n;
}

// The count a ring record would hold (trace/record.h: the count NCCL got) from the tensors torch
// recorded; 0 (unknown) for all_to_all, whose per-rank splits may legitimately differ.
uint64_t CountOf(OpType op, const FrEntry& e) {
  switch (op) {
    case OpType::kReduceScatter:
    case OpType::kScatter:
      return TotalNumel(e.output_sizes);
    case OpType::kAlltoAll:
      return 0;
    default:
      return e.input_sizes.empty() ? TotalNumel(e.output_sizes) : TotalNumel(e.input_sizes);
  }
}

int32_t DtypeOf(const FrEntry& e) {
  if (!e.input_dtypes.empty()) return NcclDtypeOfTorchName(e.input_dtypes.front());
  if (!e.output_dtypes.empty()) return NcclDtypeOfTorchName(e.output_dtypes.front());
  return -1;
}

uint32_t ThreadIdOf(const FrEntry& e) {
  if (!e.thread_id) return 0;
  uint64_t v = 0;
  const std::string& s = *e.thread_id;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() ? static_cast<uint32_t>(v) : 0;
}

struct Group {
  const FrPgConfig* pg = nullptr;
  uint64_t comm_id = 0;
  int comm_rank = -1;
  bool p2p_complete = false;  // the dump holds this group's p2p from its first (p2p_seq_id 1)
  bool p2p_note = false;      // said that its p2p cannot be matched
  std::map<std::pair<int, uint32_t>, uint64_t> p2p_seq;  // (peer, op) -> last seq
};

class Converter {
 public:
  Converter(const FrDump& dump, const FrFileFacts& facts) : dump_(dump), facts_(facts) {}

  FrRecords Run() {
    Header();
    Groups();
    const bool timing = TimingOn();
    if (timing) Attach();
    const std::vector<FrEntry>& es = dump_.entries;
    for (size_t i = 0; i < es.size();) i = Op(i, timing);
    out_.info.record_capacity = out_.records.size();
    out_.info.write_pos = out_.records.empty() ? first_index_ : out_.records.back().index + 1;
    out_.info.overwritten = first_index_;
    return std::move(out_);
  }

 private:
  void Header() {
    trace::RingInfo& h = out_.info;
    h.path = facts_.path;
    h.format_version = trace::kRingFormatVersion;
    h.pid = 0;
    h.global_rank = facts_.global_rank;
    h.nccl_version = NcclVersionCode(dump_.comm_lib_version);
    // Wall-clock times throughout: a clock pair that maps each time onto itself.
    const int64_t base = PlausibleTime(
        dump_.entries.empty() ? facts_.dump_wall_ns : dump_.entries.front().time_created_ns);
    h.start_realtime_ns = base;
    h.start_monotonic_ns = base;
    h.heartbeat_monotonic_ns = PlausibleTime(facts_.dump_wall_ns);
    first_index_ =
        dump_.entries.empty()
            ? 0
            : static_cast<uint64_t>(std::max<int64_t>(0, dump_.entries.front().record_id));
  }

  void Groups() {
    for (const FrPgConfig& pg : dump_.pg_config) {
      const auto it = std::find(pg.ranks.begin(), pg.ranks.end(), facts_.global_rank);
      if (pg.desc == "default_pg") out_.info.world_size = static_cast<int>(pg.ranks.size());
      if (it == pg.ranks.end()) continue;  // listed, but this rank is no member
      Group& g = groups_[pg.name];
      g.pg = &pg;
      g.comm_id = FrCommId(pg.name, pg.ranks);
      g.comm_rank = static_cast<int>(it - pg.ranks.begin());
      trace::CommInfo c;
      c.id = g.comm_id;
      c.origin = trace::kCommFromUniqueId;
      c.rank = g.comm_rank;
      c.nranks = static_cast<int>(pg.ranks.size());
      c.name = (pg.desc.empty() ? pg.name : pg.desc).substr(0, trace::kCommNameBytes - 1);
      out_.info.comms.push_back(std::move(c));
    }
    for (const FrEntry& e : dump_.entries) {
      const auto it = groups_.find(e.pg_name);
      if (it != groups_.end() && e.is_p2p && e.p2p_seq_id == 1) it->second.p2p_complete = true;
    }
  }

  // FR knows starts only with TORCH_NCCL_ENABLE_TIMING (torch's ProcessGroupNCCL.cpp records start
  // events only when TORCH_NCCL_ENABLE_TIMING is set).
  bool TimingOn() const {
    for (const FrPgStatus& s : dump_.pg_status) {
      if (s.last_started_collective >= 0) return true;
    }
    return std::any_of(dump_.entries.begin(), dump_.entries.end(), [](const FrEntry& e) {
      return e.time_discovered_started_ns.value_or(0) > 0;
    });
  }

  void Attach() {
    for (const auto& [name, g] : groups_) {
      RecordData r = Blank(trace::kDoneUntracked);
      r.op = static_cast<uint32_t>(OpType::kProfilerAttach);
      r.comm_id = g.comm_id;
      r.peer = g.comm_rank;
      r.t_enter_ns = r.t_exit_ns = out_.info.start_monotonic_ns;
      ++added_;
      Push(r, first_index_, -1);
    }
  }

  static RecordData Blank(int64_t done) {
    RecordData r{};
    r.dtype = -1;
    r.redop = -1;
    r.peer = -1;
    r.t_device_done_ns = done;
    return r;
  }

  void Push(const RecordData& r, uint64_t at_least, int32_t entry) {
    const uint64_t index =
        std::max(at_least, out_.records.empty() ? first_index_ : out_.records.back().index + 1);
    out_.records.push_back({index, r});
    out_.entry_of.push_back(entry);
  }

  int32_t PosOf(const FrEntry& e) const { return static_cast<int32_t>(&e - dump_.entries.data()); }

  // duration_ms is a float from the file: only a plausible one (not negative, under a day) is
  // used, in ns.
  static std::optional<int64_t> DurationNs(const FrEntry& e) {
    if (!e.duration_ms || !(*e.duration_ms >= 0) || !(*e.duration_ms < 86'400'000.0)) {
      return std::nullopt;
    }
    return static_cast<int64_t>(*e.duration_ms * 1e6);
  }

  // The index an entry's record gets: its record_id, moved on by the records added before it.
  uint64_t IndexOf(const FrEntry& e) const {
    return static_cast<uint64_t>(std::max<int64_t>(0, e.record_id)) + added_;
  }

  // The closing entry of the coalesced group starting at `i`, or i itself when there is none.
  size_t GroupEnd(size_t i) const {
    const std::vector<FrEntry>& es = dump_.entries;
    const FrEntry& head = es[i];
    for (size_t j = i; j < es.size(); ++j) {
      const FrEntry& e = es[j];
      if (e.pg_name != head.pg_name || e.collective_seq_id != head.collective_seq_id ||
          e.p2p_seq_id != head.p2p_seq_id) {
        return i;
      }
      if (ParseProfilingName(e.profiling_name).closes_coalesced) return j;
    }
    return i;
  }

  // Maps the op at entries[i] (a single entry or a coalesced group); returns the next index.
  size_t Op(size_t i, bool timing) {
    const std::vector<FrEntry>& es = dump_.entries;
    const size_t end = GroupEnd(i);
    const FrEntry& state = es[end];  // the group's events live on its closing entry
    const auto git = groups_.find(es[i].pg_name);
    if (git == groups_.end()) {
      Note("process group '" + es[i].pg_name +
           "' of some entries is not in pg_config with this rank as a member: they are left out");
      return end + 1;
    }
    Group& g = git->second;
    const bool grouped = end > i || ParseProfilingName(state.profiling_name).closes_coalesced;
    const uint64_t group_id = grouped ? ++groups_seen_ : 0;
    OpType merged = ParseProfilingName(state.profiling_name).op;
    bool has_collective = false;
    for (size_t k = i; k < end || (k == end && !grouped); ++k) {
      const FrEntry& e = es[k];
      const FrOpName name = ParseProfilingName(e.profiling_name);
      if (trace::IsP2P(name.op)) {
        P2p(g, e, name, state, group_id, timing);
      } else if (trace::IsCollective(name.op)) {
        if (!grouped) {
          Collective(g, e, name.op, CountOf(name.op, e), DtypeOf(e), state, 0, timing);
        } else {
          has_collective = true;
          if (merged == OpType::kUnknown) merged = name.op;
        }
      } else if (!name.closes_coalesced) {
        Note("unknown operation '" + e.profiling_name + "': left out");
      }
    }
    // A coalesced group of collectives counts once in collective_seq_id: one record, whose count
    // and dtype come from the closing entry alone (torch gives it no per-op sizes), so that ranks
    // dumped by torch before 2.7 (no per-op entries) and after agree.
    if (grouped && trace::IsCollective(merged) && (has_collective || !state.is_p2p)) {
      Collective(g, state, merged, 0, DtypeOf(state), state, group_id, timing);
    }
    return end + 1;
  }

  void Times(const FrEntry& state, RecordData* r, uint64_t index) const {
    r->t_enter_ns = r->t_exit_ns =
        PlausibleTime(r->t_enter_ns != 0 ? r->t_enter_ns : state.time_created_ns);
    if (state.state == FrState::kCompleted) {
      int64_t done = PlausibleTime(state.time_discovered_completed_ns.value_or(0));
      const std::optional<int64_t> duration = DurationNs(state);
      if (done <= 0 && duration && state.time_created_ns > 0 &&
          state.time_created_ns < INT64_MAX / 2) {
        done = state.time_created_ns + *duration;
      }
      r->t_device_done_ns = std::max(done, r->t_enter_ns);
    } else {
      r->t_device_done_ns = trace::PendingMarker(index);
    }
  }

  void Collective(const Group& g, const FrEntry& e, OpType op, uint64_t count, int32_t dtype,
                  const FrEntry& state, uint64_t group_id, bool timing) {
    if (e.collective_seq_id <= 0) return;
    RecordData r = Blank(0);
    r.op = static_cast<uint32_t>(op);
    r.comm_id = g.comm_id;
    r.seq = static_cast<uint64_t>(e.collective_seq_id);
    r.count = count;
    r.dtype = dtype;
    r.group_id = group_id;
    r.flags = trace::kFlagCompletionTracked | (group_id != 0 ? trace::kFlagInGroup : 0);
    r.tid = ThreadIdOf(e);
    r.t_enter_ns = e.time_created_ns;
    const uint64_t index = std::max(IndexOf(e), NextIndex());
    Times(state, &r, index);
    Push(r, index, PosOf(e));
    if (timing) Start(OpType::kDeviceStart, r, state);
    Duration(r, index, state);
  }

  void P2p(Group& g, const FrEntry& e, const FrOpName& name, const FrEntry& state,
           uint64_t group_id, bool timing) {
    RecordData r = Blank(0);
    r.op = static_cast<uint32_t>(name.op);
    r.comm_id = g.comm_id;
    r.peer = name.peer;
    r.count = CountOf(name.op, e);
    r.dtype = DtypeOf(e);
    r.group_id = group_id;
    r.flags = trace::kFlagCompletionTracked | (group_id != 0 ? trace::kFlagInGroup : 0);
    r.tid = ThreadIdOf(e);
    r.t_enter_ns = e.time_created_ns;
    if (g.p2p_complete && name.peer >= 0) {
      r.seq = ++g.p2p_seq[{name.peer, r.op}];
    } else if (!g.p2p_note) {
      g.p2p_note = true;
      Note("process group '" + g.pg->name + "' (" + g.pg->desc +
           "): its sends and receives began before the dump's oldest entry (no p2p_seq_id 1), so "
           "they cannot be matched across ranks");
    }
    const uint64_t index = std::max(IndexOf(e), NextIndex());
    Times(state, &r, index);
    Push(r, index, PosOf(e));
    if (timing && r.seq != 0) Start(OpType::kP2pDeviceStart, r, state);
    // A coalesced group's events surround the whole group: not one send's or receive's time.
    if (group_id == 0) Duration(r, index, state);
  }

  // The start FR discovered for an op (state started, or completed with its start seen).
  void Start(OpType kind, const RecordData& op, const FrEntry& state) {
    const int64_t t = PlausibleTime(state.time_discovered_started_ns.value_or(0));
    if (t <= 0 || state.state == FrState::kScheduled) return;
    RecordData r = Blank(trace::kDoneUntracked);
    r.op = static_cast<uint32_t>(kind);
    r.comm_id = op.comm_id;
    r.seq = op.seq;
    r.t_enter_ns = r.t_exit_ns = t;
    if (kind == OpType::kP2pDeviceStart) {
      r.peer = op.peer;
      r.redop = static_cast<int32_t>(op.op);
      r.dtype = 0;
    } else {
      r.peer = 0;  // channel: FR has none
    }
    ++added_;
    Push(r, NextIndex(), out_.entry_of.back());
  }

  // The device time torch measured for the op just pushed at `op_index` (duration_ms: set when a
  // timed op completed), as an event_duration record right after it.
  void Duration(const RecordData& op, uint64_t op_index, const FrEntry& state) {
    const std::optional<int64_t> ns = DurationNs(state);
    if (!ns || state.state != FrState::kCompleted || op.t_device_done_ns <= 0) return;
    RecordData r = Blank(trace::kDoneUntracked);
    r.op = static_cast<uint32_t>(OpType::kEventDuration);
    r.comm_id = op.comm_id;
    r.seq = op.seq;
    r.peer = op.peer;
    r.redop = static_cast<int32_t>(op.op);
    r.aux = op_index;
    r.count = static_cast<uint64_t>(*ns);
    r.t_enter_ns = r.t_exit_ns = op.t_device_done_ns;
    ++added_;
    Push(r, NextIndex(), out_.entry_of.back());
  }

  uint64_t NextIndex() const {
    return out_.records.empty() ? first_index_ : out_.records.back().index + 1;
  }

  void Note(std::string line) {
    if (std::find(out_.notes.begin(), out_.notes.end(), line) == out_.notes.end()) {
      out_.notes.push_back(std::move(line));
    }
  }

  const FrDump& dump_;
  const FrFileFacts& facts_;
  FrRecords out_;
  std::map<std::string, Group> groups_;
  uint64_t first_index_ = 0;
  uint64_t added_ = 0;  // records made up (attach, starts): indices after them move on
  uint64_t groups_seen_ = 0;
};

}  // namespace

uint64_t FrCommId(const std::string& pg_name, const std::vector<int>& ranks) {
  uint64_t h = Fnv1a(14695981039346656037ull, pg_name);
  h = Fnv1a(h, std::string_view("\0", 1));
  for (const int r : ranks) h = Fnv1a(h, std::to_string(r) + ",");
  return h != 0 ? h : 1;
}

FrRecords RecordsFromFrDump(const FrDump& dump, const FrFileFacts& facts) {
  return Converter(dump, facts).Run();
}

}  // namespace ncclscope::flight_recorder
