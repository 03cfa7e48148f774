// Verdict::where: the training step and phase of the operations a verdict is about, read from the
// NVTX context of the records (RankFile::NvtxAt). What the records do not say stays unsaid: a rank
// whose calls carry no context contributes no place, and no verdict gets a guessed one.
#include "hang_detector/detectors/nvtx_places.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <unordered_map>
#include <utility>

namespace ncclscope::hang_detector {
namespace {

using trace::OpType;

struct PlaceKey {
  bool has_step = false;
  uint64_t step = 0, last_step = 0;
  std::string phase, range;
  bool operator==(const PlaceKey&) const = default;
};

struct Tally {
  size_t calls = 0;
  bool has_step = false;
  uint64_t first = UINT64_MAX, last = 0;
};

// The place most of a rank's calls were made in; false when none carries a context.
bool PlaceOf(const RankFile& f, const std::vector<uint32_t>& pos, PlaceKey* out) {
  std::map<std::pair<std::string, std::string>, Tally> tally;
  for (uint32_t p : pos) {
    if (p >= f.size() || !CarriesNvtx(f.ShapeAt(p).op)) continue;
    const trace::NvtxWhere w = f.NvtxAt(p);
    if (!w.known()) continue;
    Tally& t = tally[{w.phase, w.range == w.phase ? std::string() : w.range}];
    ++t.calls;
    if (w.has_step) {
      t.has_step = true;
      t.first = std::min(t.first, w.step);
      t.last = std::max(t.last, w.step);
    }
  }
  // The most calls win; of equal counts the first in name order, so the answer is stable.
  const auto best = std::max_element(tally.begin(), tally.end(), [](const auto& a, const auto& b) {
    return a.second.calls < b.second.calls;
  });
  if (best == tally.end()) return false;
  out->phase = best->first.first;
  out->range = best->first.second;
  out->has_step = best->second.has_step;
  out->step = out->has_step ? best->second.first : 0;
  out->last_step = out->has_step ? best->second.last : 0;
  return true;
}

bool NamesCollective(const std::string& op) {
  for (OpType t : {OpType::kAllReduce, OpType::kBroadcast, OpType::kReduce, OpType::kAllGather,
                   OpType::kReduceScatter, OpType::kAlltoAll, OpType::kGather, OpType::kScatter}) {
    if (op == trace::OpTypeName(t)) return true;
  }
  return false;
}

// "allreduce #7 on tp", "send #3 to 2 on pp".
std::string CallText(const Context& ctx, const RankFile& f, uint32_t pos) {
  const OpShape& s = f.ShapeAt(pos);
  const auto op = static_cast<OpType>(s.op);
  std::string out = trace::OpTypeName(op);
  if (trace::IsCollective(op) || trace::IsP2P(op)) out += " #" + std::to_string(f.ops[pos].seq);
  if (trace::IsP2P(op)) out += (op == OpType::kSend ? " to " : " from ") + std::to_string(s.peer);
  if (const CommModel* c = ctx.index.FindComm(s.comm_id)) out += " on " + ctx.CommName(*c);
  return out;
}

// The rank's newest collective or send/recv: where a rank that never issued #N was last seen.
uint32_t NewestCall(const RankFile& f) {
  for (uint32_t p = f.size(); p-- > 0;) {
    const auto op = static_cast<OpType>(f.ShapeAt(p).op);
    if (trace::IsCollective(op) || trace::IsP2P(op)) return p;
  }
  return kNoRecord;
}

void LocateVerdict(const Context& ctx, const std::unordered_map<int, uint32_t>& file_of,
                   Verdict* v) {
  // The lane of each file on the verdict's communicator, when #seq is a collective's number.
  std::unordered_map<uint32_t, const CollLane*> lane_of;
  if (const CommModel* c = v->comm_id != 0 ? ctx.index.FindComm(v->comm_id) : nullptr;
      c != nullptr && v->seq != 0 && NamesCollective(v->op)) {
    for (const CollLane& lane : c->lanes) lane_of[lane.file] = &lane;
  }
  auto calls_of = [&](const std::vector<int>& ranks, bool culprit) {
    std::vector<PlaceCalls> calls;
    for (int r : ranks) {
      const auto found = file_of.find(r);
      if (found == file_of.end()) continue;
      const uint32_t f = found->second;
      const RankFile& file = ctx.index.files()[f];
      PlaceCalls c{r, f, {}, {}};
      const auto lane = lane_of.find(f);
      const uint32_t at = lane == lane_of.end() ? kNoRecord : lane->second->PosOf(v->seq);
      if (at != kNoRecord) {
        const bool waits = IsWaitingState(ctx.index.StateOf(f, at));
        c.pos = {at};
        c.basis = (culprit ? "its " : waits ? "waiting in " : "") + CallText(ctx, file, at);
      } else if (const uint32_t w = file.oldest_waiting_pos;
                 !culprit && w != kNoRecord && CarriesNvtx(file.ShapeAt(w).op)) {
        c.pos = {w};
        c.basis = "waiting in " + CallText(ctx, file, w);
      } else if (const uint32_t n = NewestCall(file); n != kNoRecord) {
        c.pos = {n};
        c.basis = "its newest call, " + CallText(ctx, file, n);
      }
      if (!c.pos.empty()) calls.push_back(std::move(c));
    }
    return calls;
  };
  AddPlaces(ctx.index, "culprit", calls_of(v->culprits, true), v);
  AddPlaces(ctx.index, "victim", calls_of(v->victims, false), v);
}

}  // namespace

void AddPlaces(const JobIndex& index, const std::string& role, const std::vector<PlaceCalls>& calls,
               Verdict* v) {
  struct Group {
    PlaceKey key;
    Verdict::Place place;
    size_t other_calls = 0;  // ranks whose basis is not the first rank's
  };
  std::vector<Group> groups;
  for (const PlaceCalls& c : calls) {
    PlaceKey key;
    if (!PlaceOf(index.files()[c.file], c.pos, &key)) continue;
    auto g =
        std::find_if(groups.begin(), groups.end(), [&](const Group& e) { return e.key == key; });
    if (g == groups.end()) {
      Group n;
      n.key = key;
      n.place.role = role;
      n.place.has_step = key.has_step;
      n.place.step = key.step;
      n.place.last_step = key.last_step;
      n.place.phase = key.phase;
      n.place.range = key.range;
      n.place.basis = c.basis;
      groups.push_back(std::move(n));
      g = std::prev(groups.end());
    } else if (c.basis != g->place.basis) {
      ++g->other_calls;
    }
    g->place.ranks.push_back(c.rank);
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    return a.place.ranks.size() > b.place.ranks.size();
  });
  if (groups.size() > Verdict::kMaxPlaces) groups.resize(Verdict::kMaxPlaces);
  for (Group& g : groups) {
    // Ranks of one place waiting in different operations (a merged verdict's victims): the basis
    // names the first one's and says that the others' differ.
    if (g.other_calls > 0) {
      g.place.basis = "rank " + std::to_string(g.place.ranks.front()) + ": " + g.place.basis +
                      "; " + std::to_string(g.other_calls) + " other" +
                      (g.other_calls == 1 ? " rank" : " ranks") + " in other calls";
    }
    SortUnique(&g.place.ranks);
    v->where.push_back(std::move(g.place));
  }
}

void LocatePlaces(const Context& ctx, std::vector<Verdict>* verdicts) {
  std::unordered_map<int, uint32_t> file_of;
  bool any = false;
  for (uint32_t f = 0; f < ctx.index.files().size(); ++f) {
    file_of.emplace(ctx.RankOf(f), f);
    any = any || !ctx.index.files()[f].nvtx_runs.empty();
  }
  if (!any) return;  // no NVTX anywhere: nothing to say
  for (Verdict& v : *verdicts) {
    if (v.cls == VerdictClass::kHealthy || v.cls == VerdictClass::kStraggler || !v.where.empty()) {
      continue;
    }
    LocateVerdict(ctx, file_of, &v);
  }
}

void AddTimelinePlaces(const Context& ctx, const CommTimeline& t, const std::vector<bool>& flagged,
                       const std::vector<size_t>& culprits, const std::string& flagged_as,
                       Verdict* v) {
  const size_t begin = t.WindowBegin(), n = t.samples.size();
  std::vector<size_t> samples;
  for (size_t i = begin; i < n && i < flagged.size(); ++i) {
    if (flagged[i]) samples.push_back(i);
  }
  if (samples.empty()) return;
  auto calls_of = [&](size_t m, std::string basis) {
    PlaceCalls c{t.ranks[m], t.files[m], {}, std::move(basis)};
    for (size_t i : samples) c.pos.push_back(t.samples[i].pos[m]);
    return c;
  };
  const std::string range =
      "#" + std::to_string(t.samples[begin].seq) + "..#" + std::to_string(t.samples[n - 1].seq);
  std::vector<PlaceCalls> guilty;
  for (size_t m : culprits) {
    guilty.push_back(calls_of(m, flagged_as + " " + std::to_string(samples.size()) + " of the " +
                                     std::to_string(n - begin) + " collectives " + range + " on " +
                                     v->comm_name));
  }
  AddPlaces(ctx.index, "culprit", guilty, v);
  std::vector<PlaceCalls> victims;
  for (size_t m = 0; m < t.ranks.size(); ++m) {
    const bool culprit = std::find(culprits.begin(), culprits.end(), m) != culprits.end();
    if (!culprit && std::binary_search(v->victims.begin(), v->victims.end(), t.ranks[m])) {
      victims.push_back(calls_of(m, "waiting for it in those collectives"));
    }
  }
  AddPlaces(ctx.index, "victim", victims, v);
}

void AddStragglerPlaces(const Context& ctx, const CommTimeline& t, const std::vector<bool>& late,
                        size_t culprit, Verdict* v) {
  AddTimelinePlaces(ctx, t, late, {culprit}, "late to", v);
}

}  // namespace ncclscope::hang_detector
