#include "hang_detector/ingest/rank_digest.h"

#include <algorithm>
#include <climits>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace ncclscope::hang_detector {
namespace {

using trace::OpType;

constexpr int32_t kResultSuccess = 0;
constexpr int32_t kResultInProgress = 7;

bool IsCreation(OpType op) {
  return op == OpType::kCommInitRank || op == OpType::kCommInitRankConfig ||
         op == OpType::kCommInitRankScalable || op == OpType::kCommInitAll ||
         op == OpType::kCommSplit || op == OpType::kCommShrink || op == OpType::kGetUniqueId;
}

// Whether a record may read as waiting (JobIndex::StateOf: pending or unknown), or is a call that
// has not returned. Errs towards keeping: a record kept needlessly costs bytes, one left out
// would turn a wait into a loss.
bool MayWait(const RankFile& f, uint32_t pos) {
  const int32_t result = f.ShapeAt(pos).result;
  if (result == trace::kResultInCall) return true;
  if (result != kResultSuccess && result != kResultInProgress) return false;  // failed: never waits
  const int64_t done = f.ops[pos].t_device_done_ns;
  if (done > 0) return false;
  return trace::IsPending(done) || static_cast<int64_t>(pos) > f.last_completed_pos;
}

// Counts per key, newest first, and says whether the record is still among the newest `limit`.
template <typename Key, typename Hash = std::hash<Key>>
class NewestPerKey {
 public:
  explicit NewestPerKey(size_t limit) : limit_(limit) {}
  bool Take(const Key& key) { return ++seen_[key] <= limit_; }

 private:
  size_t limit_;
  std::unordered_map<Key, size_t, Hash> seen_;
};

struct PairKey {
  uint64_t comm;
  uint32_t op;
  int32_t peer;
  bool operator==(const PairKey&) const = default;
};
struct PairHash {
  size_t operator()(const PairKey& k) const {
    return std::hash<uint64_t>()(k.comm ^ (uint64_t{k.op} << 40) ^ static_cast<uint32_t>(k.peer));
  }
};

// Proxy progress records kept per communicator: one per (channel, peer, side) of the operation
// in flight on a job of up to 32 channels and two peers per channel.
constexpr size_t kProxyRecordsPerComm = 128;

// The device_compute records (NCCLSCOPE_CUPTI) of the collectives kept, by (communicator,
// sequence number) or by the group whose end launched them, as
// hang_detector/detectors/device_compute.h looks them up: the GPU time before a collective that
// tells a compute straggler from a slow link in another node's view.
void KeepDeviceCompute(const RankFile& f, std::vector<char>* keep) {
  if (f.device_compute.empty()) return;
  std::set<std::pair<uint64_t, uint64_t>> calls;
  std::unordered_set<uint64_t> groups;
  for (uint32_t p = 0; p < f.size(); ++p) {
    if ((*keep)[p] == 0 || !trace::IsCollective(static_cast<OpType>(f.ShapeAt(p).op))) continue;
    const OpRecord& r = f.ops[p];
    if (r.group_id != 0) {
      groups.insert(r.group_id);
    } else {
      calls.insert({f.ShapeAt(p).comm_id, r.seq});
    }
  }
  for (const DeviceCompute& d : f.device_compute) {
    if (d.pos >= f.size()) continue;
    const bool of_group = d.group_id != 0 && groups.count(d.group_id) != 0;
    if (of_group || calls.count({d.comm_id, d.seq}) != 0) (*keep)[d.pos] = 1;
  }
}

// The numerics records (NCCLSCOPE_NUMERICS) another node's correlator needs (DigestLimits), and
// the records of their collectives, whose entry time and NVTX step order the samples of the job.
void KeepNumerics(const RankFile& f, const DigestLimits& limits, std::vector<char>* keep) {
  if (f.numerics.empty()) return;
  std::set<std::pair<uint64_t, uint64_t>> calls;
  const auto take = [&](const NumericsEntry& e) {
    if (e.pos >= f.size()) return;
    (*keep)[e.pos] = 1;
    calls.insert({e.sample.comm_id, e.sample.seq});
  };
  NewestPerKey<uint64_t> newest(limits.numerics_per_comm);
  for (size_t i = f.numerics.size(); i-- > 0;) {
    if (newest.Take(f.numerics[i].sample.comm_id)) take(f.numerics[i]);
  }
  // Per communicator, clean samples (newest last) until its first poisoned one.
  std::unordered_map<uint64_t, std::vector<size_t>> clean;
  std::unordered_set<uint64_t> poisoned;
  for (size_t i = 0; i < f.numerics.size(); ++i) {
    const trace::NumericsSample& s = f.numerics[i].sample;
    if (!s.scanned || poisoned.count(s.comm_id) != 0) continue;
    if (!s.Poisoned()) {
      clean[s.comm_id].push_back(i);
      continue;
    }
    poisoned.insert(s.comm_id);
    take(f.numerics[i]);
    const std::vector<size_t>& before = clean[s.comm_id];
    for (size_t k = before.size() - std::min(before.size(), limits.clean_before_nan);
         k < before.size(); ++k) {
      take(f.numerics[before[k]]);
    }
  }
  for (uint32_t p = 0; p < f.size(); ++p) {
    const OpShape& sh = f.ShapeAt(p);
    if (trace::IsCollective(static_cast<OpType>(sh.op)) &&
        calls.count({sh.comm_id, f.ops[p].seq}) != 0) {
      (*keep)[p] = 1;
    }
  }
}

std::vector<char> ChooseRecords(const RankFile& f, const DigestLimits& limits) {
  const uint32_t n = f.size();
  std::vector<char> keep(n, 0);
  if (n == 0) return keep;
  keep[0] = 1;
  if (f.last_completed_pos >= 0 && f.last_completed_pos < static_cast<int64_t>(n)) {
    keep[static_cast<size_t>(f.last_completed_pos)] = 1;
  }
  for (uint32_t p = n - static_cast<uint32_t>(std::min<size_t>(n, limits.newest)); p < n; ++p) {
    keep[p] = 1;
  }
  size_t waiting = 0;
  for (uint32_t p = 0; p < n && waiting < limits.max_waiting; ++p) {
    if (MayWait(f, p)) {
      keep[p] = 1;
      ++waiting;
    }
  }
  NewestPerKey<uint64_t> collectives(limits.per_comm);
  NewestPerKey<uint64_t> starts(limits.per_comm);  // device_start marks of those collectives
  NewestPerKey<PairKey, PairHash> pairs(limits.per_pair);
  // The profiler's send/recv starts, per (comm, direction, peer) like the operations they mark,
  // and its newest proxy progress per communicator: what names the stage of a stall
  // (hang_detector/detectors/stall_stage.h) in another node's view.
  NewestPerKey<PairKey, PairHash> p2p_starts(limits.per_pair);
  NewestPerKey<uint64_t> proxy(kProxyRecordsPerComm);
  for (uint32_t p = n; p-- > 0;) {
    const OpShape& sh = f.ShapeAt(p);
    const auto op = static_cast<OpType>(sh.op);
    bool take = false;
    if (IsCreation(op) || op == OpType::kProfilerAttach) {
      take = true;
    } else if (trace::IsCollective(op)) {
      take = collectives.Take(sh.comm_id);
    } else if (op == OpType::kDeviceStart) {
      take = starts.Take(sh.comm_id);
    } else if (trace::IsP2P(op)) {
      take = pairs.Take({sh.comm_id, sh.op, sh.peer});
    } else if (op == OpType::kP2pDeviceStart) {
      take = p2p_starts.Take({sh.comm_id, static_cast<uint32_t>(sh.redop), sh.peer});
    } else if (op == OpType::kProxyProgress) {
      take = proxy.Take(sh.comm_id);
    }
    if (take) keep[p] = 1;
  }
  KeepDeviceCompute(f, &keep);
  KeepNumerics(f, limits, &keep);
  return keep;
}

}  // namespace

void DeriveFrontier(RankFile* file) {
  RankFile& f = *file;
  f.last_completed_pos = -1;
  f.oldest_waiting_enter = INT64_MAX;
  f.oldest_waiting_pos = kNoRecord;
  for (uint32_t pos = 0; pos < f.size(); ++pos) {
    const OpRecord& r = f.ops[pos];
    if (r.t_device_done_ns > 0) f.last_completed_pos = pos;
    const bool in_call = f.shapes[r.shape].result == trace::kResultInCall;
    if ((trace::IsPending(r.t_device_done_ns) || in_call) &&
        r.t_enter_ns < f.oldest_waiting_enter) {
      f.oldest_waiting_enter = r.t_enter_ns;
      f.oldest_waiting_pos = pos;
    }
  }
}

DigestCut CutForDigest(const RankFile& file, const DigestLimits& limits) {
  const std::vector<char> keep = ChooseRecords(file, limits);
  DigestCut cut;
  RankFile& out = cut.file;
  out.snap = file.snap;
  out.rank = file.rank;
  out.wall_offset = file.wall_offset;
  out.heartbeat_wall = file.heartbeat_wall;
  out.remote = file.remote;
  // Gaps between records the cut leaves out would be forgotten: the longest pause so far travels
  // as a number.
  out.pause_before_ns = file.LongestPauseNs();
  std::vector<uint32_t> shape_map(file.shapes.size(), kNoRecord);
  uint64_t next_index = UINT64_MAX;
  size_t next_compute = 0;   // file.device_compute is in file order
  size_t next_numerics = 0;  // file.numerics too
  for (uint32_t p = 0; p < file.size(); ++p) {
    while (next_numerics < file.numerics.size() && file.numerics[next_numerics].pos < p) {
      ++next_numerics;
    }
    while (next_compute < file.device_compute.size() && file.device_compute[next_compute].pos < p) {
      ++next_compute;
    }
    if (keep[p] == 0) {
      ++cut.omitted;
      continue;
    }
    if (next_compute < file.device_compute.size() && file.device_compute[next_compute].pos == p) {
      DeviceCompute d = file.device_compute[next_compute];
      d.pos = out.size();
      out.device_compute.push_back(d);
    }
    if (next_numerics < file.numerics.size() && file.numerics[next_numerics].pos == p) {
      NumericsEntry e = file.numerics[next_numerics];
      e.pos = out.size();
      out.numerics.push_back(e);
    }
    OpRecord r = file.ops[p];
    uint32_t& mapped = shape_map[r.shape];
    if (mapped == kNoRecord) {
      mapped = static_cast<uint32_t>(out.shapes.size());
      out.shapes.push_back(file.shapes[r.shape]);
    }
    r.shape = mapped;
    const uint64_t index = file.IndexOf(p);
    if (index != next_index) out.index_runs.emplace_back(out.size(), index);
    next_index = index + 1;
    // The step and phase of the calls kept, as runs over the records kept.
    if (CarriesNvtx(out.shapes[r.shape].op)) {
      const uint32_t word = file.NvtxWordAt(p);
      if (word != (out.nvtx_runs.empty() ? 0 : out.nvtx_runs.back().second)) {
        out.nvtx_runs.emplace_back(out.size(), word);
      }
    }
    out.ops.push_back(r);
  }
  out.nvtx_names = file.nvtx_names;
  DeriveFrontier(&out);
  return cut;
}

}  // namespace ncclscope::hang_detector
