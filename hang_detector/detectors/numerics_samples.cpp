// The numerics records of every rank, gathered per sampled collective and put in the job's order.
#include "hang_detector/detectors/numerics_samples.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

namespace ncclscope::hang_detector {
namespace {

// When one rank ran the collective: its call's entry and NVTX context, or where the call is not
// held (wrapped away, cut from a digest) the numerics record's own, written at completion just
// after it.
struct RankTime {
  int64_t enter_wall = 0;
  uint32_t nvtx = 0;
};

RankTime TimeOf(const RankFile& file, const CollLane* lane, uint64_t seq, uint32_t numerics_pos) {
  const uint32_t call = lane != nullptr ? lane->PosOf(seq) : kNoRecord;
  const uint32_t at = call != kNoRecord ? call : numerics_pos;
  return {file.Wall(file.ops[at].t_enter_ns), file.NvtxWordAt(at)};
}

struct Pending {
  SampledCollective c;
  std::vector<int64_t> walls;
};

// A communicator's later collective never reads as earlier than one before it: a step or an entry
// time that goes backwards (clock steps, a missing context) is raised to its predecessor's.
void KeepCommOrder(std::vector<SampledCollective>* all) {
  std::stable_sort(all->begin(), all->end(), [](const auto& a, const auto& b) {
    return a.comm_id != b.comm_id ? a.comm_id < b.comm_id : a.seq < b.seq;
  });
  for (size_t i = 1; i < all->size(); ++i) {
    SampledCollective& c = (*all)[i];
    const SampledCollective& prev = (*all)[i - 1];
    if (prev.comm_id != c.comm_id) continue;
    c.enter_wall = std::max(c.enter_wall, prev.enter_wall);
    if (c.has_step && prev.has_step) c.step = std::max(c.step, prev.step);
  }
}

// The communicator's name as verdicts give it; its id when no comm table knows it.
std::string CommText(const Context& ctx, const SampledCollective& c) {
  if (c.comm != nullptr) return ctx.CommName(*c.comm);
  CommModel unknown;
  unknown.id = c.comm_id;
  return ctx.CommName(unknown);
}

}  // namespace

std::vector<SampledCollective> GatherSamples(const Context& ctx) {
  const auto& files = ctx.index.files();
  // Each file's lane on each communicator, found once: a lookup per sample would scan a large
  // communicator's lanes every time.
  std::vector<std::unordered_map<uint64_t, const CollLane*>> lanes(files.size());
  for (const CommModel& c : ctx.index.comms()) {
    for (const CollLane& l : c.lanes) lanes[l.file].emplace(c.id, &l);
  }
  std::map<std::pair<uint64_t, uint64_t>, Pending> by_key;
  for (uint32_t f = 0; f < files.size(); ++f) {
    const int rank = ctx.RankOf(f);
    for (const NumericsEntry& e : files[f].numerics) {
      const trace::NumericsSample& s = e.sample;
      if (!s.scanned && !s.hashed) continue;
      Pending& p = by_key[{s.comm_id, s.seq}];
      if (std::any_of(p.c.ranks.begin(), p.c.ranks.end(),
                      [&](const RankSample& r) { return r.rank == rank; })) {
        continue;  // the same rank in a second file (a restarted process): its first sample holds
      }
      if (p.c.ranks.empty()) {
        p.c.comm_id = s.comm_id;
        p.c.seq = s.seq;
        p.c.op = s.op;
        p.c.comm = ctx.index.FindComm(s.comm_id);
      }
      p.c.ranks.push_back({rank, f, e.pos, &s});
      const auto lane = lanes[f].find(s.comm_id);
      const RankTime t =
          TimeOf(files[f], lane == lanes[f].end() ? nullptr : lane->second, s.seq, e.pos);
      p.walls.push_back(t.enter_wall);
      if (trace::NvtxHasStep(t.nvtx)) {
        const uint64_t step = trace::NvtxStep(t.nvtx);
        p.c.step = p.c.has_step ? std::min(p.c.step, step) : step;
        p.c.has_step = true;
      }
    }
  }
  std::vector<SampledCollective> all;
  all.reserve(by_key.size());
  for (auto& [key, p] : by_key) {
    std::nth_element(p.walls.begin(), p.walls.begin() + p.walls.size() / 2, p.walls.end());
    p.c.enter_wall = p.walls[p.walls.size() / 2];
    std::sort(p.c.ranks.begin(), p.c.ranks.end(),
              [](const RankSample& a, const RankSample& b) { return a.rank < b.rank; });
    all.push_back(std::move(p.c));
  }
  KeepCommOrder(&all);
  const bool by_step =
      std::all_of(all.begin(), all.end(), [](const auto& c) { return c.has_step; });
  std::stable_sort(all.begin(), all.end(), [&](const auto& a, const auto& b) {
    if (by_step && a.step != b.step) return a.step < b.step;
    if (a.enter_wall != b.enter_wall) return a.enter_wall < b.enter_wall;
    return a.comm_id != b.comm_id ? a.comm_id < b.comm_id : a.seq < b.seq;
  });
  return all;
}

std::vector<int> RanksOf(const std::vector<const RankSample*>& samples) {
  std::vector<int> ranks;
  for (const RankSample* r : samples) ranks.push_back(r->rank);
  return ranks;
}

std::string CollectiveName(const Context& ctx, const SampledCollective& c) {
  return CommText(ctx, c) + " " + trace::OpTypeName(c.op) + " #" + std::to_string(c.seq);
}

void PlaceVerdictAt(const Context& ctx, const SampledCollective& c, Verdict* v) {
  v->comm_id = c.comm_id;
  v->comm_name = CommText(ctx, c);
  v->op = trace::OpTypeName(c.op);
  v->seq = c.seq;
  v->since_s = std::max(0.0, ctx.SinceS(c.enter_wall));
}

void AddNumerics(const Context& ctx, std::vector<Verdict>* verdicts) {
  const std::vector<SampledCollective> job = GatherSamples(ctx);
  if (job.empty()) return;
  std::vector<Verdict> found;
  CheckCorruptOutput(ctx, job, &found);
  CheckNanOrigin(ctx, job, &found);
  // After every hang-class verdict, before the stragglers (correlator.cpp, Priority).
  const auto at = std::find_if(verdicts->begin(), verdicts->end(),
                               [](const Verdict& v) { return !IsHang(v.cls); });
  verdicts->insert(at, std::make_move_iterator(found.begin()),
                   std::make_move_iterator(found.end()));
}

}  // namespace ncclscope::hang_detector
