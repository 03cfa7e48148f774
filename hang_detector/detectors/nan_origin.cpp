// nan-origin: the earliest sampled collective where some ranks' inputs held NaN or Inf. A NaN
// spreads through the next collective to every rank, so every collective after the origin is
// poisoned everywhere: only the first one says who fed it in, and the later ones are consequences.
// When the first poisoned sample is poisoned on every rank, the origin was not sampled, and no
// rank is blamed: the sampling missed it, and a guess would name a victim.
#include <algorithm>

#include "hang_detector/detectors/numerics_samples.h"
#include "trace/nccl_names.h"

namespace ncclscope::hang_detector {
namespace {

constexpr size_t kMaxConsequencesListed = 3;  // later poisoned collectives named in the summary
constexpr size_t kMaxRankLines = 8;           // per-rank evidence lines of the origin
constexpr size_t kMaxConsequences = 5;        // evidence lines of later poisoned collectives

struct Scanned {
  std::vector<const RankSample*> poisoned, clean;
};

Scanned Split(const SampledCollective& c) {
  Scanned s;
  for (const RankSample& r : c.ranks) {
    if (!r.sample->scanned) continue;
    (r.sample->Poisoned() ? s.poisoned : s.clean).push_back(&r);
  }
  return s;
}

// "3 NaN and 0 Inf, first at element 1024 (float32)".
std::string Counts(const trace::NumericsSample& s) {
  std::string out =
      std::to_string(s.nan_count) + " NaN and " + std::to_string(s.inf_count) + " Inf";
  if (s.first_nonfinite != trace::kNumericsNone) {
    out += ", first at element " + std::to_string(s.first_nonfinite);
  }
  return out + " (" + trace::DataTypeName(s.dtype) + ")";
}

// "3 NaN and 0 Inf", summed over the samples.
std::string Totals(const std::vector<const RankSample*>& samples) {
  uint64_t nan = 0, inf = 0;
  for (const RankSample* r : samples) nan += r->sample->nan_count, inf += r->sample->inf_count;
  return std::to_string(nan) + " NaN and " + std::to_string(inf) + " Inf";
}

bool Poisoned(const SampledCollective& c) {
  return std::any_of(c.ranks.begin(), c.ranks.end(),
                     [](const RankSample& r) { return r.sample->Poisoned(); });
}

// "tp allreduce #13 (8 of 8 sampled ranks)".
std::string Consequence(const Context& ctx, const SampledCollective& c, const Scanned& s) {
  return CollectiveName(ctx, c) + " (" + std::to_string(s.poisoned.size()) + " of " +
         std::to_string(s.poisoned.size() + s.clean.size()) + " sampled ranks)";
}

// The later poisoned collectives: in the summary (a few), as evidence (a few more), and their
// poisoned ranks as the verdict's victims.
std::string AddConsequences(const Context& ctx, const std::vector<SampledCollective>& job,
                            size_t origin, Verdict* v) {
  std::vector<std::string> named;
  size_t later = 0;
  for (size_t i = origin + 1; i < job.size(); ++i) {
    if (!Poisoned(job[i])) continue;
    const Scanned s = Split(job[i]);
    ++later;
    for (const RankSample* r : s.poisoned) v->victims.push_back(r->rank);
    if (named.size() < kMaxConsequencesListed) named.push_back(Consequence(ctx, job[i], s));
    if (later <= kMaxConsequences) {
      v->evidence.push_back(
          ctx.RecordEvidence(s.poisoned.front()->file, s.poisoned.front()->pos,
                             "consequence, not a culprit: input of " + Consequence(ctx, job[i], s) +
                                 " held NaN/Inf; here " + Counts(*s.poisoned.front()->sample)));
    }
  }
  std::erase_if(v->victims, [&](int r) {
    return std::find(v->culprits.begin(), v->culprits.end(), r) != v->culprits.end();
  });
  SortUnique(&v->victims);
  if (later == 0) return "";
  std::string out = "; later poisoned collectives are listed as consequences, not culprits: ";
  for (size_t i = 0; i < named.size(); ++i) out += (i > 0 ? ", " : "") + named[i];
  if (later > named.size()) out += " and " + std::to_string(later - named.size()) + " more";
  return out;
}

void AddRankLines(const Context& ctx, const SampledCollective& c,
                  const std::vector<const RankSample*>& ranks, Verdict* v) {
  for (size_t i = 0; i < ranks.size() && i < kMaxRankLines; ++i) {
    v->evidence.push_back(ctx.RecordEvidence(
        ranks[i]->file, ranks[i]->pos,
        "input of " + CollectiveName(ctx, c) + " held " + Counts(*ranks[i]->sample)));
  }
}

}  // namespace

void CheckNanOrigin(const Context& ctx, const std::vector<SampledCollective>& job,
                    std::vector<Verdict>* out) {
  // The job is in run order, so the first poisoned collective is the earliest.
  const auto first = std::find_if(job.begin(), job.end(), Poisoned);
  if (first == job.end()) return;
  const size_t origin = static_cast<size_t>(first - job.begin());
  const SampledCollective& o = *first;
  const Scanned s = Split(o);
  Verdict v;
  v.cls = VerdictClass::kNanOrigin;
  PlaceVerdictAt(ctx, o, &v);
  AddUnseen(
      ctx, o, [](const trace::NumericsSample& n) { return n.scanned; }, &v);
  const std::vector<int> poisoned = RanksOf(s.poisoned);
  if (!s.clean.empty()) {
    v.culprits = poisoned;
    const bool one = poisoned.size() == 1;
    v.summary = RankList(poisoned) + " fed NaN/Inf into it (" +
                (one ? "its input held " : "their inputs held ") + Totals(s.poisoned) + ") while " +
                RankList(RanksOf(s.clean)) + (s.clean.size() == 1 ? " was" : " were") +
                " clean: the earliest sampled collective with a non-finite input";
    AddRankLines(ctx, o, s.poisoned, &v);
    v.evidence.push_back(ctx.RecordEvidence(
        s.clean.front()->file, s.clean.front()->pos,
        "input of " + CollectiveName(ctx, o) + " scanned clean (no NaN, no Inf)"));
  } else {
    // Every earlier sample is clean on every rank scanned (the origin is the first poisoned one);
    // the nearest one bounds where the NaN came from.
    const SampledCollective* clean = nullptr;
    for (size_t i = origin; i-- > 0;) {
      if (!Split(job[i]).clean.empty()) {
        clean = &job[i];
        break;
      }
    }
    v.summary = "every sampled rank's input already held NaN/Inf (" + RankList(poisoned) + ")";
    v.summary += clean != nullptr ? ": the origin was not sampled; it lies between " +
                                        CollectiveName(ctx, *clean) +
                                        " (clean on every sampled rank) and this collective"
                                  : " at the first sampled collective: the origin precedes the "
                                    "sampling window";
    v.summary += "; no rank is blamed";
    AddRankLines(ctx, o, s.poisoned, &v);
  }
  v.summary += AddConsequences(ctx, job, origin, &v);
  if (v.culprits.empty()) {  // the ranks poisoned at the first sample only received it too
    v.victims.insert(v.victims.end(), poisoned.begin(), poisoned.end());
    SortUnique(&v.victims);
  }
  out->push_back(std::move(v));
}

}  // namespace ncclscope::hang_detector
