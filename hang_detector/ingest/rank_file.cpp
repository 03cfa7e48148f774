#include "hang_detector/ingest/rank_file.h"

#include <algorithm>
#include <iterator>

#include "trace/ring_layout.h"

namespace ncclscope::hang_detector {
namespace {

using trace::OpType;

bool IsInitCall(OpType op) {
  return op == OpType::kCommInitRank || op == OpType::kCommInitRankConfig ||
         op == OpType::kCommInitRankScalable || op == OpType::kCommSplit ||
         op == OpType::kCommShrink;
}

OpShape ShapeOf(const trace::RecordData& r) {
  OpShape s;
  s.comm_id = r.comm_id;
  s.stream = r.stream;
  s.op = r.op;
  s.dtype = r.dtype;
  s.redop = r.redop;
  s.peer = r.peer;
  s.result = r.result;
  const auto op = static_cast<OpType>(r.op);
  if (trace::IsCollective(op) || trace::IsP2P(op) || IsInitCall(op)) {
    s.count = r.count;
    s.aux = r.aux;
  }
  return s;
}

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

bool IsOperation(uint32_t op) {
  const auto t = static_cast<OpType>(op);
  return trace::IsCollective(t) || trace::IsP2P(t);
}

bool IsWatchdogAbort(const OpShape& s, uint32_t flags) {
  return s.op == static_cast<uint32_t>(OpType::kCommAbort) && (flags & trace::kFlagByWatchdog) != 0;
}

}  // namespace

int64_t RankFile::LongestPauseNs() const {
  int64_t longest = pause_before_ns;
  int64_t previous_enter = -1;
  size_t next_run = 1;  // index_runs[0] starts at position 0
  // What the process did once its watchdog aborted it (waits that the abort ended, its way out)
  // is no pause the job has shown: stretches are counted up to the first such abort only.
  int64_t cutoff = INT64_MAX;
  for (uint32_t p = 0; p < size(); ++p) {
    if (IsWatchdogAbort(ShapeAt(p), ops[p].flags)) {
      cutoff = ops[p].t_enter_ns;
      break;
    }
  }
  const auto pause = [cutoff](int64_t from, int64_t to) {
    return to > cutoff ? int64_t{0} : to - from;
  };
  for (uint32_t p = 0; p < size(); ++p) {
    const OpRecord& r = ops[p];
    if (r.t_enter_ns >= cutoff) break;
    // Where the writer's indices jump, records in between are not here (a digest's cut, a torn
    // slot): the time across the jump is not a pause this rank is known to have made.
    if (next_run < index_runs.size() && index_runs[next_run].first == p) {
      ++next_run;
      previous_enter = -1;
    }
    if (r.t_exit_ns > r.t_enter_ns) longest = std::max(longest, pause(r.t_enter_ns, r.t_exit_ns));
    if (!IsOperation(ShapeAt(p).op)) continue;
    if (r.t_device_done_ns > r.t_enter_ns) {
      longest = std::max(longest, pause(r.t_enter_ns, r.t_device_done_ns));
    }
    if (previous_enter >= 0) longest = std::max(longest, r.t_enter_ns - previous_enter);
    previous_enter = r.t_enter_ns;
  }
  return longest;
}

trace::RecordData RankFile::At(uint32_t pos) const {
  const OpRecord& o = ops[pos];
  const OpShape& s = shapes[o.shape];
  trace::RecordData r{};
  r.comm_id = s.comm_id;
  r.seq = o.seq;
  r.group_id = o.group_id;
  r.count = s.count;
  r.stream = s.stream;
  r.aux = s.aux;
  r.t_enter_ns = o.t_enter_ns;
  r.t_exit_ns = o.t_exit_ns;
  r.t_device_done_ns = o.t_device_done_ns;
  r.op = s.op;
  r.dtype = s.dtype;
  r.redop = s.redop;
  r.peer = s.peer;
  r.result = s.result;
  r.flags = o.flags;
  return r;
}

uint32_t RankFile::NvtxWordAt(uint32_t pos) const {
  auto run = std::upper_bound(nvtx_runs.begin(), nvtx_runs.end(), pos,
                              [](uint32_t p, const auto& r) { return p < r.first; });
  return run == nvtx_runs.begin() ? 0 : std::prev(run)->second;
}

uint64_t RankFile::IndexOf(uint32_t pos) const {
  auto run = std::upper_bound(index_runs.begin(), index_runs.end(), pos,
                              [](uint32_t p, const auto& r) { return p < r.first; });
  --run;  // the first run starts at position 0, so there always is one at or before pos
  return run->second + (pos - run->first);
}

size_t RankFileBuilder::ShapeHash::operator()(const OpShape& s) const {
  uint64_t h = Mix(s.comm_id, s.count);
  h = Mix(h, s.aux);
  h = Mix(h, s.stream);
  h = Mix(h, uint64_t{s.op} << 32 | static_cast<uint32_t>(s.dtype));
  h = Mix(h, uint64_t{static_cast<uint32_t>(s.redop)} << 32 | static_cast<uint32_t>(s.peer));
  return Mix(h, static_cast<uint32_t>(s.result));
}

uint32_t RankFileBuilder::Intern(const OpShape& s) {
  // Back-to-back calls of one shape (a burst of identical sends, say) skip the hash.
  if (last_shape_ != kNoRecord && out_->shapes[last_shape_] == s) return last_shape_;
  auto [it, inserted] = shape_ids_.try_emplace(s, static_cast<uint32_t>(out_->shapes.size()));
  if (inserted) out_->shapes.push_back(s);
  last_shape_ = it->second;
  return last_shape_;
}

void RankFileBuilder::BeginFile(const trace::RingInfo& info) {
  info_ = info;
  out_->rank = info.global_rank;
  out_->wall_offset = info.start_realtime_ns - info.start_monotonic_ns;
  out_->heartbeat_wall = out_->Wall(info.heartbeat_monotonic_ns);
  out_->ops.reserve(info.write_pos - info.overwritten);
}

void RankFileBuilder::Records(const trace::StoredRecord* batch, size_t n) {
  RankFile& f = *out_;
  for (size_t i = 0; i < n; ++i) {
    const trace::RecordData& r = batch[i].data;
    const auto pos = static_cast<uint32_t>(f.ops.size());
    if (batch[i].index != next_index_) f.index_runs.emplace_back(pos, batch[i].index);
    next_index_ = batch[i].index + 1;
    if (r.t_device_done_ns > 0) f.last_completed_pos = pos;
    if ((trace::IsPending(r.t_device_done_ns) || r.result == trace::kResultInCall) &&
        r.t_enter_ns < f.oldest_waiting_enter) {
      f.oldest_waiting_enter = r.t_enter_ns;
      f.oldest_waiting_pos = pos;
    }
    if (trace::NvtxNames::IsNameRecord(r)) f.nvtx_names.Add(r);
    if (CarriesNvtx(r.op)) {
      // The first run opens only once a call carries a context, so a job without NVTX has none.
      const uint32_t current = f.nvtx_runs.empty() ? 0 : f.nvtx_runs.back().second;
      if (r.reserved != current) f.nvtx_runs.emplace_back(pos, r.reserved);
    }
    if (r.op == static_cast<uint32_t>(OpType::kDeviceCompute)) {
      f.device_compute.push_back({pos, r.comm_id, r.seq, r.group_id, static_cast<uint32_t>(r.redop),
                                  static_cast<uint32_t>(r.peer),
                                  r.recv_buffer != 0 ? static_cast<int64_t>(r.count) : int64_t{-1},
                                  r.aux});
    }
    if (r.op == static_cast<uint32_t>(OpType::kNumerics)) {
      f.numerics.push_back({pos, trace::DecodeNumerics(r)});
    }
    f.ops.push_back({r.t_enter_ns, r.t_exit_ns, r.t_device_done_ns, r.seq, r.group_id,
                     Intern(ShapeOf(r)), r.flags});
  }
}

void RankFileBuilder::EndFile(const trace::RingInfo& info) {
  if ((info_.flags & trace::kHeaderWatchdogAborted) != 0) MarkAbandoned();
  info_.torn_records = info.torn_records;
  out_->snap = std::make_shared<const trace::RingInfo>(std::move(info_));
  // The interning table is only needed while reading; the shapes stay.
  shape_ids_ = {};
}

void RankFileBuilder::MarkAbandoned() {
  RankFile& f = *out_;
  for (uint32_t a = 0; a < f.size(); ++a) {
    if (!IsWatchdogAbort(f.ShapeAt(a), f.ops[a].flags)) continue;
    const uint64_t comm = f.ShapeAt(a).comm_id;
    const int64_t at = f.ops[a].t_enter_ns;
    for (uint32_t p = 0; p < a; ++p) {
      OpRecord& r = f.ops[p];
      if (f.ShapeAt(p).comm_id != comm || !IsOperation(f.ShapeAt(p).op)) continue;
      if (r.t_device_done_ns == trace::kDoneUntracked) continue;
      if (r.t_device_done_ns > 0 && r.t_device_done_ns < at) continue;  // done before the abort
      // Still waiting when the abort came: abandoned, so still pending to every detector.
      r.t_device_done_ns = trace::PendingMarker(f.IndexOf(p));
      r.flags |= trace::kFlagByWatchdog;
      if (r.t_enter_ns < f.oldest_waiting_enter) {
        f.oldest_waiting_enter = r.t_enter_ns;
        f.oldest_waiting_pos = p;
      }
    }
  }
  f.last_completed_pos = -1;
  for (int64_t p = static_cast<int64_t>(f.size()) - 1; p >= 0; --p) {
    if (f.ops[static_cast<size_t>(p)].t_device_done_ns > 0) {
      f.last_completed_pos = p;
      break;
    }
  }
}

}  // namespace ncclscope::hang_detector
