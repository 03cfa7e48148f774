// Compute stragglers. At each collective a rank's lateness is how much less it waited than the
// other members (median of theirs): the last to arrive waits least, and waits are differences of
// one host's clock. Its own time between seeing its previous work complete and issuing the op
// (gap), against the others' gaps, says whether it is late of its own doing: a rank that waited
// for the straggler in one group finishes late and therefore arrives late in its other groups, but
// its gap there is ordinary.
//
// The rule counts training steps (straggler_steps.h), not collectives. Per step, a rank's
// lateness and gap excess add up over the collectives of each of its communicators in that step,
// and the median over its communicators is the step's value (late in one group only is a starved
// moment, or that group's own matter). Pairs count only for a rank in no larger group: the other
// member of a pair is its whole reference, whose own delays would count in full. A rank is a
// compute straggler when, over its newest steps (at least kMinSteps):
//   large      its median lateness is at least LatenessThreshold(step time) and its median gap
//              excess at least kOwnShare of that;
//   sustained  it is later than the others, of its own doing, in at least kSustainedShare of the
//              steps;
//   not noise  its median lateness stands kNoiseZ standard errors above zero, the standard error
//              from the step-to-step scatter all ranks' lateness shows (a loaded machine starves
//              ranks in turn: they pass the first two tests for a while, and the scatter grows).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "hang_detector/detectors/nvtx_places.h"
#include "hang_detector/detectors/straggler_scores.h"
#include "hang_detector/detectors/straggler_steps.h"

namespace ncclscope::hang_detector {
namespace {

// The share of the threshold a straggler's own gap excess must reach. Below 1 because gap excess
// and lateness are measured against different references (the others' gaps, the others' waits),
// each with its own jitter.
constexpr double kOwnShare = 0.75;
// For normally distributed noise: standard deviation = 1.4826 x the median absolute deviation,
// and the standard error of a median of n values = 1.2533 x standard deviation / sqrt(n).
constexpr double kMadToSigma = 1.4826;
constexpr double kMedianError = 1.2533;

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
  std::vector<double> late_median, own_median;  // per member, over the window's collectives
};

Scores Score(const CommTimeline& t) {
  Scores s;
  for (const Sample& x : t.samples) {
    std::vector<double> late = AgainstOthers(x.wait_s);
    for (double& l : late) l = -l;
    s.late.push_back(std::move(late));
    s.own.push_back(AgainstOthers(x.gap_s));
  }
  for (size_t m = 0; m < t.ranks.size(); ++m) {
    std::vector<double> late, own;
    for (size_t i = t.WindowBegin(); i < t.samples.size(); ++i) {
      late.push_back(s.late[i][m]);
      own.push_back(s.own[i][m]);
    }
    s.late_median.push_back(Median(late));
    s.own_median.push_back(Median(own));
  }
  return s;
}

// A communicator with enough complete collectives to judge.
struct Judged {
  const CommTimeline* t = nullptr;
  Scores s;
  double step_time_s = kNaN;
  std::vector<int64_t> period_steps;  // PeriodSteps(*t): the same for every member
};

struct RankStep {
  int64_t step = 0;
  double late_s = kNaN;
  double own_s = kNaN;  // NaN when no gap of the step is known
};

// One rank over its steps, as the rule judges it.
struct RankJudgement {
  std::vector<std::pair<size_t, size_t>> member_of;  // (Judged index, member position)
  double step_time_s = kNaN, threshold_s = kNaN;
  bool nvtx = false;
  std::vector<RankStep> steps;  // oldest first, the newest kWindow
  double late_median = kNaN, own_median = kNaN;
  bool own_known = false;  // gaps known for at least half of the steps (else lateness decides)
  size_t late_steps = 0;   // later than the others, of its own doing
  double errors = kNaN;    // its median lateness in standard errors of the job's noise
};

void BuildSteps(const Context& ctx, const std::vector<Judged>& judged, RankJudgement* r) {
  std::vector<double> step_times;
  size_t calls = 0, with_step = 0;
  for (const auto& [j, m] : r->member_of) {
    const CommTimeline& t = *judged[j].t;
    step_times.push_back(judged[j].step_time_s);
    for (size_t i = t.WindowBegin(); i < t.samples.size(); ++i) {
      ++calls;
      with_step += NvtxStepOf(ctx, t, m, i) != kNoStep ? 1 : 0;
    }
  }
  r->step_time_s = Median(step_times);
  r->threshold_s = LatenessThreshold(r->step_time_s);
  // NVTX steps when most calls carry one (calls outside a step range are left out); otherwise
  // each communicator's own period, its steps counted back from its newest.
  r->nvtx = with_step > 0 && with_step * 2 >= calls;
  if (!std::isfinite(r->step_time_s)) return;  // "large against the step time" needs one
  struct Part {
    size_t judged;
    double late_s = 0, own_s = 0;
    bool own_known = false;
  };
  // In a pair the other member is the whole reference: its own delays count in full against this
  // rank. Where the rank has larger groups, they judge it (the median of many others is steady).
  const bool has_large = std::any_of(r->member_of.begin(), r->member_of.end(), [&](const auto& jm) {
    return judged[jm.first].t->ranks.size() > 2;
  });
  std::map<int64_t, std::vector<Part>> parts;  // by step; one part per communicator
  for (const auto& [j, m] : r->member_of) {
    const CommTimeline& t = *judged[j].t;
    if (has_large && t.ranks.size() <= 2) continue;
    const Scores& s = judged[j].s;
    const std::vector<int64_t> steps = r->nvtx ? NvtxSteps(ctx, t, m) : judged[j].period_steps;
    for (size_t k = 0; k < steps.size(); ++k) {
      const size_t i = t.WindowBegin() + k;
      if (steps[k] == kNoStep || !std::isfinite(s.late[i][m])) continue;
      std::vector<Part>& v = parts[steps[k]];
      if (v.empty() || v.back().judged != j) v.push_back({j});
      v.back().late_s += s.late[i][m];
      if (std::isfinite(s.own[i][m])) {
        v.back().own_s += s.own[i][m];
        v.back().own_known = true;
      }
    }
  }
  auto it = parts.begin();
  if (parts.size() > kWindow) std::advance(it, parts.size() - kWindow);
  std::vector<double> late, own;
  for (; it != parts.end(); ++it) {
    late.clear();
    own.clear();
    for (const Part& p : it->second) {
      late.push_back(p.late_s);
      if (p.own_known) own.push_back(p.own_s);
    }
    r->steps.push_back({it->first, Median(late), Median(own)});
  }
}

// Everything but the noise test, which needs every rank's steps.
void Measure(RankJudgement* r) {
  std::vector<double> late, own;
  for (const RankStep& s : r->steps) {
    late.push_back(s.late_s);
    if (std::isfinite(s.own_s)) own.push_back(s.own_s);
  }
  r->late_median = Median(late);
  r->own_median = Median(own);
  r->own_known = own.size() * 2 >= r->steps.size();
  for (const RankStep& s : r->steps) {
    // A step whose gaps are unknown is judged by lateness alone.
    const bool own_doing = !r->own_known || !(s.own_s <= 0);
    if (s.late_s > 0 && own_doing) ++r->late_steps;
  }
}

bool LargeAndSustained(const RankJudgement& r) {
  const double m = static_cast<double>(r.steps.size());
  return r.steps.size() >= kMinSteps && r.late_median >= r.threshold_s &&
         (!r.own_known || r.own_median >= kOwnShare * r.threshold_s) &&
         static_cast<double>(r.late_steps) >= std::ceil(kSustainedShare * m - 1e-9);
}

// The job's scheduling noise: the typical step-to-step scatter of a rank's lateness about its own
// median, over every rank judged (a straggler's steady lateness is not scatter).
double NoiseSigma(const std::vector<RankJudgement>& ranks) {
  std::vector<double> dev;
  for (const RankJudgement& r : ranks) {
    if (r.steps.size() < kMinSteps) continue;
    for (const RankStep& s : r.steps) dev.push_back(std::fabs(s.late_s - r.late_median));
  }
  return kMadToSigma * Median(dev);
}

std::string Range(const CommTimeline& t) {
  return "#" + std::to_string(t.samples[t.WindowBegin()].seq) + "..#" +
         std::to_string(t.samples.back().seq);
}

std::string StepsText(const RankJudgement& r) {
  return r.nvtx ? std::to_string(r.steps.size()) + " steps"
                : "the last " + std::to_string(r.steps.size()) + " periods of its communicators";
}

Verdict MakeVerdict(const Context& ctx, const Judged& j, size_t c, const RankJudgement& r,
                    double sigma) {
  const CommTimeline& t = *j.t;
  const Scores& s = j.s;
  const double threshold = r.threshold_s;
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
  // The collectives it is late to: by half its median lateness at least, so that scheduling noise
  // before the onset, which can pass the threshold, does not move "since" earlier.
  const double late_at = std::max(threshold, r.late_median / 2);
  std::vector<bool> flags;
  for (size_t i = 0; i < n; ++i) flags.push_back(s.late[i][c] > late_at);
  AddStragglerPlaces(ctx, t, flags, c, &v);  // the phase of the collectives it is late to
  const size_t onset = std::min(Onset(flags), n - 1);
  const RankFile& file = ctx.index.files()[t.files[c]];
  const int64_t onset_wall = file.Wall(file.At(t.samples[onset].pos[c]).t_enter_ns);
  v.since_s = ctx.SinceS(onset_wall);
  char share[16];
  std::snprintf(share, sizeof share, "%.0f%%", kRelative * 100);
  v.summary = "compute straggler: " + RankList(v.culprits) + " arrives " + Millis(r.late_median) +
              " after the others per step (median of " + StepsText(r) + ", threshold " +
              Millis(threshold) + ", " + share + " of a " + Millis(r.step_time_s) +
              " step), later of its own doing in " + std::to_string(r.late_steps) + " of them" +
              (std::isfinite(r.own_median)
                   ? ", its own time before its calls " + Millis(r.own_median) + " longer"
                   : std::string()) +
              "; " + (v.victims.empty() ? std::string("nobody") : RankList(v.victims)) + " wait" +
              (v.victims.size() == 1 ? "s" : "") + " for it on " + v.comm_name;
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
  // The rule's numbers, to check the verdict against.
  Evidence rule;
  rule.rank = t.ranks[c];
  rule.has_record = false;
  rule.text = (r.nvtx ? "NVTX steps " + std::to_string(r.steps.front().step) + ".." +
                            std::to_string(r.steps.back().step)
                      : StepsText(r)) +
              ": late " + Millis(r.late_median) + " per step (median), later of its own doing in " +
              std::to_string(r.late_steps) + " of " + std::to_string(r.steps.size()) +
              "; the job's step-to-step scatter " + Millis(sigma) + ", its median " +
              (std::isfinite(r.errors)
                   ? std::to_string(static_cast<int>(r.errors)) + " standard errors above zero"
                   : std::string("without scatter to compare"));
  v.evidence.push_back(std::move(rule));
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
  std::vector<Judged> judged;
  for (const CommTimeline& t : timelines) {
    if (t.samples.size() - t.WindowBegin() < kMinSamples) continue;
    judged.push_back({&t, Score(t), StepTime(ctx, t), PeriodSteps(t)});
  }
  std::map<int, size_t> index;  // rank -> ranks[]
  std::vector<RankJudgement> ranks;
  for (size_t j = 0; j < judged.size(); ++j) {
    for (size_t m = 0; m < judged[j].t->ranks.size(); ++m) {
      const int rank = judged[j].t->ranks[m];
      auto [it, inserted] = index.try_emplace(rank, ranks.size());
      if (inserted) ranks.emplace_back();
      ranks[it->second].member_of.emplace_back(j, m);
    }
  }
  for (RankJudgement& r : ranks) {
    BuildSteps(ctx, judged, &r);
    Measure(&r);
  }
  const double sigma = NoiseSigma(ranks);
  for (RankJudgement& r : ranks) {
    if (!LargeAndSustained(r)) continue;
    const double error = kMedianError * sigma / std::sqrt(static_cast<double>(r.steps.size()));
    r.errors = error > 0 ? r.late_median / error : kNaN;
    if (error > 0 && r.late_median < kNoiseZ * error) continue;
    // One verdict per communicator it keeps waiting (late there by half the threshold), at least
    // the one where it is latest; the correlator merges them, led by the one with most victims.
    size_t latest = 0;
    std::vector<size_t> where;
    for (size_t k = 0; k < r.member_of.size(); ++k) {
      const auto [j, m] = r.member_of[k];
      const double late = judged[j].s.late_median[m];
      const auto [lj, lm] = r.member_of[latest];
      if (late > judged[lj].s.late_median[lm]) latest = k;
      if (late >= r.threshold_s / 2) where.push_back(k);
    }
    if (where.empty()) where.push_back(latest);
    for (size_t k : where) {
      const auto [j, m] = r.member_of[k];
      out->push_back(MakeVerdict(ctx, judged[j], m, r, sigma));
    }
  }
}

}  // namespace ncclscope::hang_detector
