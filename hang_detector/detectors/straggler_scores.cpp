// Timelines of complete collectives per communicator, and the robust statistics the straggler
// checks share.
#include "hang_detector/detectors/straggler_scores.h"

#include "hang_detector/detectors/device_compute.h"

#include <algorithm>
#include <cstdio>

namespace ncclscope::hang_detector {
namespace {

// Records looked back at for the newest completion before an entry: a host that waits for its
// work each step finds it among the last few; one that runs further ahead has no meaningful gap.
constexpr uint32_t kGapLookBack = 64;

// Entry minus the newest completion (collective or send/recv) this rank saw before it: the host
// time it spent on its own between seeing work finish and issuing this op. NaN when none is near.
double GapBefore(const RankFile& file, uint32_t pos) {
  const int64_t enter = file.ops[pos].t_enter_ns;
  int64_t newest = INT64_MIN;
  const uint32_t first = pos > kGapLookBack ? pos - kGapLookBack : 0;
  for (uint32_t p = pos; p-- > first;) {
    const int64_t done = file.ops[p].t_device_done_ns;
    if (done > 0 && done <= enter) newest = std::max(newest, done);
  }
  return newest == INT64_MIN ? kNaN : static_cast<double>(enter - newest) * 1e-9;
}

// When the op at `seq` could start on this rank: its entry, or later when the previous collective
// of the same stream was still running (it queues behind it, which is not waiting for a peer).
int64_t StartOf(const RankFile& file, const CollLane& lane, uint64_t seq) {
  const uint32_t pos = lane.PosOf(seq);
  const OpRecord& r = file.ops[pos];
  const uint32_t prev = seq > 0 ? lane.PosOf(seq - 1) : kNoRecord;
  if (prev == kNoRecord) return r.t_enter_ns;
  const OpRecord& p = file.ops[prev];
  if (file.ShapeAt(prev).stream != file.ShapeAt(pos).stream || p.t_device_done_ns <= 0)
    return r.t_enter_ns;
  return std::max(r.t_enter_ns, p.t_device_done_ns);
}

// The newest kKept sequence numbers of [lo, hi) that completed on every member, oldest first.
// Lane by lane, so each member's records are read in file order (the members' files are far apart
// in memory: a world of 4096 members read sequence by sequence misses the cache at every member).
// The span looked at starts at kKept and doubles only while incomplete collectives (the ones a hang
// left behind) keep it from holding kKept complete ones.
std::vector<uint64_t> CompleteSeqs(const JobIndex& index, const CommModel& comm, uint64_t lo,
                                   uint64_t hi) {
  std::vector<uint8_t> incomplete;  // by distance from the newest: hi - 1 - seq
  uint64_t begin = hi, span = kKept;
  size_t complete = 0;
  while (begin > lo && complete < kKept) {
    const uint64_t end = begin;
    begin = hi - lo > span ? hi - span : lo;
    incomplete.resize(hi - begin, 0);
    for (const CollLane& lane : comm.lanes) {
      const RankFile& file = index.files()[lane.file];
      for (uint64_t seq = begin; seq < end; ++seq) {
        uint8_t& bad = incomplete[hi - 1 - seq];
        if (bad != 0) continue;  // a job without completion tracking reads each lane once
        const uint32_t pos = lane.PosOf(seq);
        bad = pos == kNoRecord || file.ops[pos].t_device_done_ns <= 0 ? 1 : 0;
      }
    }
    complete = static_cast<size_t>(std::count(incomplete.begin(), incomplete.end(), 0));
    span *= 2;
  }
  std::vector<uint64_t> seqs;
  for (uint64_t d = 0; d < incomplete.size() && seqs.size() < kKept; ++d) {
    if (incomplete[d] == 0) seqs.push_back(hi - 1 - d);
  }
  std::reverse(seqs.begin(), seqs.end());
  return seqs;
}

// Fills member m of every sample from its lane, in file order.
void FillMember(const RankFile& file, const CollLane& lane, size_t m, size_t window_begin,
                std::vector<Sample>* samples) {
  for (size_t i = 0; i < samples->size(); ++i) {
    Sample& s = (*samples)[i];
    const uint32_t pos = lane.PosOf(s.seq);
    const OpRecord& r = file.ops[pos];
    s.pos[m] = pos;
    // In double: times from a damaged file (or dump) may be any int64, and the difference of two
    // must not overflow.
    s.wait_s[m] = (static_cast<double>(r.t_device_done_ns) -
                   static_cast<double>(StartOf(file, lane, s.seq))) *
                  1e-9;
    s.gap_s[m] = i >= window_begin ? GapBefore(file, pos) : kNaN;
    s.done_ns[m] = r.t_device_done_ns;
  }
}

}  // namespace

std::vector<CommTimeline> BuildTimelines(const Context& ctx) {
  const JobIndex& index = ctx.index;
  std::vector<CommTimeline> out;
  for (const CommModel& comm : index.comms()) {
    // Scores compare every member; a member without a file would be an unseen straggler.
    if (comm.nranks < 2 || static_cast<int>(comm.lanes.size()) != comm.nranks) continue;
    CommTimeline t;
    t.comm = &comm;
    uint64_t lo = 0, hi = UINT64_MAX;
    for (const CollLane& lane : comm.lanes) {
      t.files.push_back(lane.file);
      t.ranks.push_back(ctx.RankOf(lane.file));
      lo = std::max(lo, lane.first_seq);
      hi = std::min(hi, lane.EndSeq());
    }
    if (lo >= hi) continue;
    // Only as many as the window and the past it is compared with: memory stays O(members x kKept)
    // however long the job ran.
    const std::vector<uint64_t> seqs = CompleteSeqs(index, comm, lo, hi);
    if (seqs.empty()) continue;
    const size_t members = comm.lanes.size();
    t.samples.resize(seqs.size());
    for (size_t i = 0; i < seqs.size(); ++i) {
      Sample& s = t.samples[i];
      s.seq = seqs[i];
      s.pos.resize(members);
      s.wait_s.resize(members);
      s.gap_s.resize(members);
      s.done_ns.resize(members);
    }
    for (size_t m = 0; m < members; ++m) {
      FillMember(index.files()[comm.lanes[m].file], comm.lanes[m], m, t.WindowBegin(), &t.samples);
    }
    for (Sample& s : t.samples) {
      s.sig = SignatureOf(index.files()[comm.lanes[0].file].ShapeAt(s.pos[0]));
      s.transfer_s = *std::min_element(s.wait_s.begin(), s.wait_s.end());
    }
    out.push_back(std::move(t));
  }
  return out;
}

double Median(std::vector<double> v) {
  std::erase_if(v, [](double x) { return !std::isfinite(x); });
  if (v.empty()) return kNaN;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  return (upper + *std::max_element(v.begin(), v.begin() + mid)) / 2;
}

double MedianWithout(const std::vector<double>& sorted, double x) {
  const size_t n = sorted.size();
  if (n < 2) return kNaN;
  const size_t k = std::lower_bound(sorted.begin(), sorted.end(), x) - sorted.begin();
  auto at = [&](size_t i) { return sorted[i < k ? i : i + 1]; };
  const size_t left = n - 1;
  return left % 2 == 1 ? at(left / 2) : (at(left / 2 - 1) + at(left / 2)) / 2;
}

double Period(const CommTimeline& t) {
  // The interval between two collectives of the same signature is one iteration of the training
  // loop, however many other collectives the communicator runs in between. Which earlier sample
  // repeats a signature is the same for every member, so it is found once.
  const size_t begin = t.WindowBegin();
  std::vector<std::pair<size_t, size_t>> repeats;  // (earlier, later) sample of one signature
  for (size_t i = begin; i < t.samples.size(); ++i) {
    for (size_t k = i; k-- > begin;) {
      if (!(t.samples[k].sig == t.samples[i].sig)) continue;
      repeats.emplace_back(k, i);
      break;
    }
  }
  std::vector<double> per_rank, d;
  for (size_t m = 0; m < t.ranks.size(); ++m) {
    d.clear();
    for (const auto& [k, i] : repeats) {
      d.push_back(static_cast<double>(t.samples[i].done_ns[m] - t.samples[k].done_ns[m]) * 1e-9);
    }
    per_rank.push_back(Median(d));
  }
  return Median(per_rank);
}

size_t Onset(const std::vector<bool>& flags) {
  size_t onset = flags.size(), flagged = 0;
  for (size_t i = flags.size(); i-- > 0;) {
    flagged += flags[i] ? 1 : 0;
    if (flags[i] && flagged * 10 >= (flags.size() - i) * 6) onset = i;
  }
  return onset;
}

double LatenessThreshold(double step_time_s) {
  return std::isfinite(step_time_s) ? std::max(kFloorS, kRelative * step_time_s) : kFloorS;
}

std::string Millis(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f ms", s * 1e3);
  return buf;
}

void CheckStragglers(const Context& ctx, std::vector<Verdict>* out) {
  const std::vector<CommTimeline> timelines = BuildTimelines(ctx);
  const size_t first = out->size();
  CheckComputeStragglers(ctx, timelines, out);
  CheckSlowLinks(ctx, timelines, out);
  ApplyDeviceCompute(ctx, timelines, out, first);
}

}  // namespace ncclscope::hang_detector
