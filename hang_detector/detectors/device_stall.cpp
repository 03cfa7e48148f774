#include "hang_detector/detectors/device_stall.h"

#include <string>

#include "hang_detector/detectors/stall_stage.h"

namespace ncclscope::hang_detector {
namespace {

using trace::OpType;

// kProxyLag: no start of #seq, but the proxy thread that reports starts has not reported an earlier
// collective that completed either: its events are late, so the absence proves nothing.
enum class Start : uint8_t { kStarted, kNotStarted, kUnknown, kProxyLag };

struct Finding {
  Start state = Start::kUnknown;
  uint32_t file = 0;
  uint32_t marker = kNoRecord;  // the device_start marker of #seq, when started
};

// Whether the profiler was watching `comm` on this file before `end`: an attach record, or a start
// marker of an earlier collective. Scans backwards; the nearest sign usually lies close.
bool WatchedBefore(const RankFile& f, uint64_t comm_id, uint32_t end) {
  for (uint32_t pos = end; pos-- > 0;) {
    const OpShape& sh = f.ShapeAt(pos);
    if (sh.comm_id != comm_id) continue;
    const auto op = static_cast<OpType>(sh.op);
    if (op == OpType::kProfilerAttach || (op == OpType::kDeviceStart && f.ops[pos].seq != 0)) {
      return true;
    }
  }
  return false;
}

// Whether collective #prev completed on this file's device while its start was never reported.
// NCCL reports kernel starts from its proxy thread (src/transport/profiler.cc,
// profilerProxyProgress), so a proxy thread that stopped makes every later start look missing;
// the device completion comes from the probe's own thread and is not delayed with it.
bool ProxyLags(const JobIndex& index, const CommModel& comm, uint64_t prev, uint32_t file) {
  const RankFile& f = index.files()[file];
  for (const CollLane& lane : comm.lanes) {
    if (lane.file != file) continue;
    const uint32_t pos = lane.PosOf(prev);
    if (pos == kNoRecord || index.StateOf(file, pos) != OpState::kCompleted) return false;
    // A start may be written before the call's own record (the kernel can start before NCCL
    // returns), but not before the previous collective's record: it was issued after that one.
    const uint32_t before = prev > 1 ? lane.PosOf(prev - 1) : kNoRecord;
    for (uint32_t p = before == kNoRecord ? 0 : before; p < f.size(); ++p) {
      const OpShape& sh = f.ShapeAt(p);
      if (sh.comm_id == comm.id && static_cast<OpType>(sh.op) == OpType::kDeviceStart &&
          f.ops[p].seq == prev) {
        return false;
      }
    }
    return true;
  }
  return false;
}

Finding Examine(const JobIndex& index, const CommModel& comm, uint64_t seq, uint32_t file) {
  const RankFile& f = index.files()[file];
  Finding out;
  out.file = file;
  // #seq was called after #seq-1 returned on this rank, so its marker lies after that record.
  uint32_t lo = 0;
  for (const CollLane& lane : comm.lanes) {
    if (lane.file != file || seq == 0) continue;
    const uint32_t prev = lane.PosOf(seq - 1);
    if (prev != kNoRecord) lo = prev;
  }
  bool watched = false;
  bool unattributed = false;
  for (uint32_t p = f.size(); p-- > lo;) {
    const OpShape& sh = f.ShapeAt(p);
    if (sh.comm_id != comm.id) continue;
    const auto op = static_cast<OpType>(sh.op);
    if (op == OpType::kProfilerAttach) {
      watched = true;
    } else if (op == OpType::kDeviceStart) {
      const uint64_t s = f.ops[p].seq;
      if (s == seq) {
        out.state = Start::kStarted;
        out.marker = p;
        return out;
      }
      // A start the probe could not number may be this very collective's.
      if (s == 0) unattributed = true;
      if (s != 0 && s < seq) watched = true;
    }
  }
  if (unattributed) return out;
  if (watched || WatchedBefore(f, comm.id, lo)) out.state = Start::kNotStarted;
  if (out.state == Start::kNotStarted && seq > 1 && ProxyLags(index, comm, seq - 1, file)) {
    out.state = Start::kProxyLag;
  }
  return out;
}

}  // namespace

bool LocalizeDeviceStall(const Context& ctx, const CommModel& comm, uint64_t seq,
                         const std::vector<uint32_t>& waiting_files, Verdict* v) {
  std::vector<Finding> started, not_started;
  for (const uint32_t file : waiting_files) {
    const Finding f = Examine(ctx.index, comm, seq, file);
    if (f.state == Start::kUnknown) return false;
    if (f.state == Start::kProxyLag) {
      // Never "its kernel never started": its proxy thread reports nothing while the rank lives.
      const int r = ctx.RankOf(f.file);
      v->stall.stage = "proxy-stalled";
      v->stall.rank = r;
      v->summary += "; " + RankList({r}) + "'s NCCL proxy thread has reported nothing since #" +
                    std::to_string(seq - 1) +
                    ", which completed: whether its kernel of this one started is unknown";
      return false;
    }
    (f.state == Start::kStarted ? started : not_started).push_back(f);
  }
  if (not_started.empty() && !started.empty()) {
    std::vector<uint32_t> files_started;
    for (const Finding& f : started) files_started.push_back(f.file);
    return ResolveStallStage(ctx, comm, seq, files_started, v);
  }
  if (started.empty() || not_started.empty()) return false;

  const auto& files = ctx.index.files();
  const std::string name = ctx.CommName(comm);
  const std::string n = "#" + std::to_string(seq);
  v->culprits.clear();
  for (const Finding& f : not_started) v->culprits.push_back(ctx.RankOf(f.file));
  for (const Finding& f : started) v->victims.push_back(ctx.RankOf(f.file));
  SortUnique(&v->culprits);
  SortUnique(&v->victims);
  v->tie = false;
  v->stall.stage = "not-started";
  v->stall.rank = v->culprits.front();
  v->summary = "device work of " + n + " never started on " + RankList(v->culprits) +
               " (its stream is blocked before it); it started on " + RankList(v->victims) +
               (v->victims.size() == 1 ? ", which waits" : ", which wait") + " for it";
  // The records of #seq on every waiting rank follow (added by the caller); these say what the
  // profiler saw: one start marker, and the absence of one on each culprit.
  v->evidence.clear();
  const Finding& s = started.front();
  const int channel = files[s.file].ShapeAt(s.marker).peer;
  v->evidence.push_back(
      ctx.RecordEvidence(s.file, s.marker,
                         "device work of " + n + " on " + name + " started (kernel channel " +
                             std::to_string(channel) + ") and waits for its peers"));
  for (const Finding& f : not_started) {
    if (v->evidence.size() >= 4) break;
    Evidence e;
    e.rank = ctx.RankOf(f.file);
    e.has_record = false;
    e.text = "the profiler watched " + name + " but saw no device start of " + n;
    v->evidence.push_back(e);
  }
  return true;
}

}  // namespace ncclscope::hang_detector
