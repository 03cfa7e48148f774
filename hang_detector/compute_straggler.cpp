// Compute stragglers. At each collective a rank's lateness is how much less it waited than the
// other members (median of theirs): the last to arrive waits least, and waits are differences of
// one host's clock. A rank is a straggler of a communicator when the median of its lateness over
// the window passes the threshold, and it is late of its own doing: its own time between seeing
// its previous work complete and issuing the op (gap) exceeds the others' too. The second test
// keeps victims off the list: a rank that waited for the straggler in one group finishes late and
// therefore arrives late in its other groups, but its gap there is ordinary.
#include <algorithm>
#include <map>

#include "hang_detector/nvtx_places.h"
#include "hang_detector/straggler_scores.h"

namespace ncclscope::hang_detector {
namespace {

// The share of the threshold a straggler's own gap excess must reach. Below 1 because gap excess
// and lateness are measured against different references (the others' gaps, the others' waits),
// each with its own jitter.
constexpr double kOwnShare = 0.75;

// x[m] minus the median of the other members' finite values; NaN where x[m] is not finite. One sort
// per collective, so a 4096-rank world stays O(n log n).
std::vector<double> AgainstOthers(const std::vector<double>& x) {
  std::vector<double> sorted;
  for (double v : x) {
    if (std::isfinite(v)) sorted.push_back(v);
  }
  std::sort(sorted.begin(), sorted.end());
  std::vector<double> out(x.size(), kNaN);
  for (size_t m = 0; m < x.size(); ++m) {
    if (std::isfinite(x[m])) out[m] = x[m] - MedianWithout(sorted, x[m]);
  }
  return out;
}

struct Scores {
  // Per sample, per member: how much later than the others it arrived, and how much longer its own
  // gap was than theirs.
  std::vector<std::vector<double>> late, own;
  std::vector<double> late_median, own_median;  // per member, over the window
  std::vector<size_t> own_known;                // window samples with a gap for that member
};

Scores Score(const CommTimeline& t) {
  Scores s;
  for (const Sample& x : t.samples) {
    std::vector<double> late = AgainstOthers(x.wait_s);
    for (double& l : late) l = -l;
    s.late.push_back(std::move(late));
    s.own.push_back(AgainstOthers(x.gap_s));
  }
  const size_t members = t.ranks.size();
  for (size_t m = 0; m < members; ++m) {
    std::vector<double> late, own;
    for (size_t i = t.WindowBegin(); i < t.samples.size(); ++i) {
      late.push_back(s.late[i][m]);
      own.push_back(s.own[i][m]);
    }
    s.own_known.push_back(static_cast<size_t>(
        std::count_if(own.begin(), own.end(), [](double v) { return std::isfinite(v); })));
    s.late_median.push_back(Median(late));
    s.own_median.push_back(Median(own));
  }
  return s;
}

std::string Range(const CommTimeline& t) {
  return "#" + std::to_string(t.samples[t.WindowBegin()].seq) + "..#" +
         std::to_string(t.samples.back().seq);
}

Verdict MakeVerdict(const Context& ctx, const CommTimeline& t, const Scores& s, size_t c,
                    double threshold) {
  const size_t n = t.samples.size(), begin = t.WindowBegin();
  Verdict v;
  v.cls = VerdictClass::kStraggler;
  v.comm_id = t.comm->id;
  v.comm_name = ctx.CommName(*t.comm);
  v.op = trace::OpTypeName(static_cast<trace::OpType>(t.samples.back().sig.op));
  v.seq = t.samples.back().seq;
  v.culprits = {t.ranks[c]};
  std::vector<double> wait_more(t.ranks.size(), kNaN);
  for (size_t m = 0; m < t.ranks.size(); ++m) {
    if (m == c) continue;
    std::vector<double> d;
    for (size_t i = begin; i < n; ++i) d.push_back(t.samples[i].wait_s[m] - t.samples[i].wait_s[c]);
    wait_more[m] = Median(d);
    if (wait_more[m] > threshold / 2) v.victims.push_back(t.ranks[m]);
  }
  SortUnique(&v.victims);
  std::vector<bool> flags;
  for (size_t i = 0; i < n; ++i) flags.push_back(s.late[i][c] > threshold);
  AddStragglerPlaces(ctx, t, flags, c, &v);  // the phase of the collectives it is late to
  const size_t onset = std::min(Onset(flags), n - 1);
  const RankFile& file = ctx.index.files()[t.files[c]];
  const int64_t onset_wall = file.Wall(file.At(t.samples[onset].pos[c]).t_enter_ns);
  v.since_s = ctx.SinceS(onset_wall);
  v.summary = "compute straggler: " + RankList(v.culprits) + " arrives " +
              Millis(s.late_median[c]) + " after the others (median of " +
              std::to_string(n - begin) + " collectives " + Range(t) + ", threshold " +
              Millis(threshold) + ")" +
              (std::isfinite(s.own_median[c])
                   ? ", its own time before the call " + Millis(s.own_median[c]) + " longer"
                   : std::string()) +
              "; " + (v.victims.empty() ? std::string("nobody") : RankList(v.victims)) + " wait" +
              (v.victims.size() == 1 ? "s" : "") + " for it";
  const Sample& last = t.samples.back();
  v.evidence.push_back(ctx.RecordEvidence(
      t.files[c], last.pos[c],
      DescribeOp(file.At(last.pos[c])) + " on " + v.comm_name + ": waited " +
          Millis(last.wait_s[c]) + ", the others " + Millis(Median(last.wait_s)) + " (median)"));
  if (onset + 1 < n) {
    // When, not only where: the verdict's "since" is this moment.
    v.evidence.push_back(
        ctx.RecordEvidence(t.files[c], t.samples[onset].pos[c],
                           "late since " + ctx.Ago(onset_wall) + ", " + v.comm_name + " " +
                               DescribeOp(file.At(t.samples[onset].pos[c])) + ": arrived " +
                               Millis(s.late[onset][c]) + " after the others"));
  }
  // Per-rank scores, latest arrivers first: what a person checks the verdict against.
  std::vector<size_t> order(t.ranks.size());
  for (size_t m = 0; m < order.size(); ++m) order[m] = m;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return s.late_median[a] > s.late_median[b]; });
  for (size_t m : order) {
    if (v.evidence.size() >= 12) break;
    Evidence e;
    e.rank = t.ranks[m];
    e.has_record = false;
    e.text = "score on " + v.comm_name + " " + Range(t) + ": arrives " + Millis(s.late_median[m]) +
             " after the others, own time " +
             (std::isfinite(s.own_median[m]) ? Millis(s.own_median[m]) : std::string("unknown")) +
             " longer" +
             (m == c ? std::string()
                     : ", waits " + Millis(wait_more[m]) + " longer than " + RankList(v.culprits));
    v.evidence.push_back(std::move(e));
  }
  return v;
}

}  // namespace

void CheckComputeStragglers(const Context& ctx, const std::vector<CommTimeline>& timelines,
                            std::vector<Verdict>* out) {
  // A compute straggler keeps every group it is in waiting. A rank late in only some of its groups
  // was starved for a while, or is late there for a reason of that group: no verdict.
  std::map<int, std::pair<int, int>> judged_late;  // rank -> (groups judged, groups late in)
  std::vector<Verdict> found;
  for (const CommTimeline& t : timelines) {
    const size_t window = t.samples.size() - t.WindowBegin();
    if (window < kMinSamples) continue;
    const Scores s = Score(t);
    const double period = Period(t);
    const double threshold = std::max(kFloorS, std::isfinite(period) ? kRelative * period : 0.0);
    for (size_t m = 0; m < t.ranks.size(); ++m) {
      const bool late = s.late_median[m] > threshold;
      // Without gaps (a host that never saw a completion before issuing) lateness alone decides.
      const bool own_doing = s.own_known[m] * 2 < window || s.own_median[m] > kOwnShare * threshold;
      ++judged_late[t.ranks[m]].first;
      if (!late || !own_doing) continue;
      ++judged_late[t.ranks[m]].second;
      found.push_back(MakeVerdict(ctx, t, s, m, threshold));
    }
  }
  for (Verdict& v : found) {
    const auto [judged, late] = judged_late[v.culprits[0]];
    if (late * 3 >= judged * 2) out->push_back(std::move(v));
  }
}

}  // namespace ncclscope::hang_detector
