// Slow links. A rank whose transfers are slow delays every op of its communicators for all members
// alike: arrival order stays as it was, but the smallest wait of a collective (the last arriver's,
// which is pure transfer time) grows. That transfer time is compared against references that
// share the op sizes: the sibling groups of the same split at the same sequence number (an SPMD
// program drives them identically), and the communicator's own first collectives of the same
// signature. Slow needs a median ratio of kSlowRatio and kFloorS more time, and that ratio in
// kSustainedShare of the window's training steps (straggler_steps.h), as sustained as a compute
// straggler's lateness. The slow rank is the one in every slow communicator and in no fast one;
// when that leaves several, the verdict is a tie among them.
#include <algorithm>
#include <cmath>
#include <map>

#include "hang_detector/detectors/nvtx_places.h"
#include "hang_detector/detectors/straggler_scores.h"
#include "hang_detector/detectors/straggler_steps.h"

namespace ncclscope::hang_detector {
namespace {

constexpr size_t kBaseline = 4;  // first collectives of a signature: the communicator's own past

enum class Speed { kUnknown, kSlow, kFast };

struct Judgement {
  const CommTimeline* t = nullptr;
  Speed speed = Speed::kUnknown;
  std::vector<double> ratio;  // per sample, transfer / reference; NaN without reference
  double ratio_median = kNaN, transfer_s = kNaN, reference_s = kNaN;
  std::string against;  // "sibling groups" or "its earlier collectives"
};

using FamilyKey = std::pair<uint64_t, uint32_t>;  // (parent, split index)

// Transfer times of every group of each split, by sequence number, sorted: built once so a split
// into thousands of groups costs O(groups log groups) per sequence number, not its square.
struct Families {
  std::map<FamilyKey, std::map<uint64_t, std::vector<double>>> transfers;
  std::map<FamilyKey, size_t> groups;
  explicit Families(const std::vector<CommTimeline>& all) {
    for (const CommTimeline& t : all) {
      if (t.comm->parent_id == 0) continue;
      const FamilyKey key{t.comm->parent_id, t.comm->split_index};
      ++groups[key];
      for (const Sample& s : t.samples) transfers[key][s.seq].push_back(s.transfer_s);
    }
    for (auto& [key, by_seq] : transfers) {
      for (auto& [seq, v] : by_seq) std::sort(v.begin(), v.end());
    }
  }
  bool HasSiblings(const CommModel& c) const {
    auto it = groups.find({c.parent_id, c.split_index});
    return c.parent_id != 0 && it != groups.end() && it->second > 1;
  }
};

// Per sample: the median transfer time of the sibling groups at the same sequence number.
std::vector<double> SiblingReference(const CommTimeline& t, const Families& f) {
  std::vector<double> ref(t.samples.size(), kNaN);
  if (!f.HasSiblings(*t.comm)) return ref;
  const auto& by_seq = f.transfers.at({t.comm->parent_id, t.comm->split_index});
  for (size_t i = 0; i < t.samples.size(); ++i) {
    const double r = MedianWithout(by_seq.at(t.samples[i].seq), t.samples[i].transfer_s);
    if (r > 0) ref[i] = r;
  }
  return ref;
}

// Per sample: the median transfer time of the first kBaseline samples of its signature; NaN for
// those first samples themselves.
std::vector<double> HistoryReference(const CommTimeline& t) {
  std::vector<double> ref(t.samples.size(), kNaN);
  std::map<std::tuple<uint32_t, int32_t, int32_t, int32_t, uint64_t>, std::vector<double>> base;
  for (size_t i = 0; i < t.samples.size(); ++i) {
    const OpSignature& g = t.samples[i].sig;
    std::vector<double>& b = base[{g.op, g.dtype, g.redop, g.root, g.count}];
    if (b.size() < kBaseline) {
      b.push_back(t.samples[i].transfer_s);
    } else {
      ref[i] = Median(b);
    }
  }
  return ref;
}

// Whether the transfers took kSlowRatio times the reference in at least kSustainedShare of the
// window's steps (kMinSteps at least): a slow link is slow step after step, where scheduling noise
// that slows a group now and then (a starved member's share of the transfer) comes and goes.
bool SlowerStepAfterStep(const std::vector<int64_t>& steps, const Judgement& j) {
  std::map<int64_t, std::vector<double>> by_step;
  for (size_t k = 0; k < steps.size(); ++k) {
    const double r = j.ratio[j.t->WindowBegin() + k];
    if (steps[k] != kNoStep && std::isfinite(r)) by_step[steps[k]].push_back(r);
  }
  size_t slower = 0;
  for (const auto& [step, ratios] : by_step) slower += Median(ratios) >= kSlowRatio ? 1 : 0;
  const double n = static_cast<double>(by_step.size());
  return by_step.size() >= kMinSteps &&
         static_cast<double>(slower) >= std::ceil(kSustainedShare * n - 1e-9);
}

Judgement Judge(const CommTimeline& t, const std::vector<int64_t>& steps,
                const std::vector<double>& ref, const char* against) {
  Judgement j;
  j.t = &t;
  j.against = against;
  std::vector<double> transfer, reference, ratio;
  for (size_t i = 0; i < t.samples.size(); ++i) {
    const bool known = std::isfinite(ref[i]) && ref[i] > 0;
    j.ratio.push_back(known ? t.samples[i].transfer_s / ref[i] : kNaN);
    if (i < t.WindowBegin() || !known) continue;
    transfer.push_back(t.samples[i].transfer_s);
    reference.push_back(ref[i]);
    ratio.push_back(j.ratio.back());
  }
  if (ratio.size() < kMinSamples) return j;
  j.ratio_median = Median(ratio);
  j.transfer_s = Median(transfer);
  j.reference_s = Median(reference);
  if (j.ratio_median >= kSlowRatio && j.transfer_s - j.reference_s > kFloorS &&
      SlowerStepAfterStep(steps, j)) {
    j.speed = Speed::kSlow;
  } else if (j.ratio_median <= kFastRatio) {
    j.speed = Speed::kFast;
  }
  return j;
}

std::string Describe(const Context& ctx, const Judgement& j) {
  return ctx.CommName(*j.t->comm) + " (" + RankList(j.t->ranks) + "): transfer " +
         Millis(j.transfer_s) + " vs " + Millis(j.reference_s) + " in " + j.against + " (x" +
         std::to_string(j.ratio_median).substr(0, 4) + ", median of #" +
         std::to_string(j.t->samples[j.t->WindowBegin()].seq) + "..#" +
         std::to_string(j.t->samples.back().seq) + ")";
}

Verdict MakeVerdict(const Context& ctx, const std::vector<Judgement>& slow,
                    const std::vector<Judgement>& fast, std::vector<int> culprits, bool tie) {
  // The smallest slow group localizes best; the verdict is told on it.
  const Judgement& lead = *std::min_element(slow.begin(), slow.end(), [](auto& a, auto& b) {
    return a.t->ranks.size() < b.t->ranks.size();
  });
  const CommTimeline& t = *lead.t;
  Verdict v;
  v.cls = VerdictClass::kStraggler;
  v.comm_id = t.comm->id;
  v.comm_name = ctx.CommName(*t.comm);
  v.op = trace::OpTypeName(static_cast<trace::OpType>(t.samples.back().sig.op));
  v.seq = t.samples.back().seq;
  v.culprits = std::move(culprits);
  v.tie = tie;
  for (const Judgement& j : slow) {
    for (int r : j.t->ranks) {
      if (std::find(v.culprits.begin(), v.culprits.end(), r) == v.culprits.end())
        v.victims.push_back(r);
    }
  }
  SortUnique(&v.victims);
  std::vector<bool> flags;
  for (double r : lead.ratio) flags.push_back(r >= kSlowRatio);
  const size_t onset = std::min(Onset(flags), t.samples.size() - 1);
  const RankFile& file = ctx.index.files()[t.files[0]];
  const int64_t onset_wall = file.Wall(file.At(t.samples[onset].pos[0]).t_enter_ns);
  v.since_s = ctx.SinceS(onset_wall);
  v.summary = "slow link: transfers of " + RankList(v.culprits) + " are x" +
              std::to_string(lead.ratio_median).substr(0, 4) + " slower than in " + lead.against +
              " (" + std::to_string(slow.size()) + " slow communicator(s), arrival on time)" +
              (tie ? "; no fast group tells which of them" : "") + "; " +
              (v.victims.empty() ? std::string("nobody") : RankList(v.victims)) + " wait";
  const Sample& last = t.samples.back();
  v.evidence.push_back(ctx.RecordEvidence(t.files[0], last.pos[0],
                                          DescribeOp(file.At(last.pos[0])) + " on " + v.comm_name +
                                              ": the last arriver waited " +
                                              Millis(last.transfer_s)));
  if (onset + 1 < t.samples.size()) {
    v.evidence.push_back(ctx.RecordEvidence(
        t.files[0], t.samples[onset].pos[0],
        "slow since " + ctx.Ago(onset_wall) + ", " + v.comm_name + " " +
            DescribeOp(file.At(t.samples[onset].pos[0])) + ": transfer x" +
            std::to_string(lead.ratio[onset]).substr(0, 4) + " of " + lead.against));
  }
  // The phase of the slow transfers: the culprits' and their victims' calls of the collectives
  // of the lead group that were slow.
  std::vector<size_t> members;
  for (int r : v.culprits) {
    const auto it = std::find(t.ranks.begin(), t.ranks.end(), r);
    if (it != t.ranks.end()) members.push_back(static_cast<size_t>(it - t.ranks.begin()));
  }
  AddTimelinePlaces(ctx, t, flags, members, "transfers slow in", &v);
  for (const Judgement& j : slow) {
    if (v.evidence.size() < 12)
      v.evidence.push_back({j.t->ranks[0], 0, false, "slow: " + Describe(ctx, j)});
  }
  for (const Judgement& j : fast) {
    if (v.evidence.size() < 12)
      v.evidence.push_back({j.t->ranks[0], 0, false, "fast: " + Describe(ctx, j)});
  }
  return v;
}

}  // namespace

void CheckSlowLinks(const Context& ctx, const std::vector<CommTimeline>& timelines,
                    std::vector<Verdict>* out) {
  // Siblings are measured at the same moment, so they are immune to what slows the whole job
  // (load, a fabric-wide slowdown); a group with siblings is judged by them alone. The own past is
  // for groups without siblings (world), judged against how much the whole job drifted, and only
  // counts when some sibling-judged group is slow too or no group has siblings: a past that says
  // "slower" alone is as likely a busier machine as a slow link. It never says "fast": a link slow
  // from the start would look fast against itself.
  std::vector<Judgement> slow, fast, past_slow;
  std::vector<Judgement> pasts;
  bool any_siblings = false;
  const Families families(timelines);
  for (const CommTimeline& t : timelines) {
    const std::vector<double> ref = SiblingReference(t, families);
    const bool has_siblings =
        std::any_of(ref.begin(), ref.end(), [](double r) { return std::isfinite(r); });
    any_siblings = any_siblings || has_siblings;
    const std::vector<int64_t> steps = StepsOfCommunicator(ctx, t);
    const Judgement past = Judge(t, steps, HistoryReference(t), "its earlier collectives");
    if (std::isfinite(past.ratio_median)) pasts.push_back(past);
    if (!has_siblings) continue;
    const Judgement sib = Judge(t, steps, ref, "sibling groups");
    if (sib.speed == Speed::kSlow) slow.push_back(sib);
    if (sib.speed == Speed::kFast) fast.push_back(sib);
  }
  std::vector<double> drifts;
  for (const Judgement& j : pasts) drifts.push_back(j.ratio_median);
  const double drift = pasts.size() >= 3 ? std::max(1.0, Median(drifts)) : 1.0;
  for (const Judgement& j : pasts) {
    const bool alone = !families.HasSiblings(*j.t->comm);
    if (alone && j.speed == Speed::kSlow && j.ratio_median >= kSlowRatio * drift)
      past_slow.push_back(j);
  }
  if (!slow.empty() || !any_siblings) slow.insert(slow.end(), past_slow.begin(), past_slow.end());
  if (slow.empty()) return;
  std::vector<int> common = slow[0].t->ranks;
  SortUnique(&common);
  for (const Judgement& j : slow) {
    std::vector<int> members = j.t->ranks, both;
    SortUnique(&members);
    std::set_intersection(common.begin(), common.end(), members.begin(), members.end(),
                          std::back_inserter(both));
    common = both;
  }
  std::vector<int> cleared = common;
  for (const Judgement& j : fast) {
    std::erase_if(cleared, [&](int r) {
      return std::find(j.t->ranks.begin(), j.t->ranks.end(), r) != j.t->ranks.end();
    });
  }
  // Nothing left: the slow groups share no rank, or fast groups clear them all (two slow links,
  // or a slowdown of the fabric): every rank of the slow groups is a suspect.
  if (cleared.empty()) {
    if (common.empty()) {
      for (const Judgement& j : slow)
        common.insert(common.end(), j.t->ranks.begin(), j.t->ranks.end());
      SortUnique(&common);
    }
    cleared = common;
  }
  const bool tie = cleared.size() > 1;
  out->push_back(MakeVerdict(ctx, slow, fast, cleared, tie));
}

}  // namespace ncclscope::hang_detector
