// corrupt-output: at a collective whose output NCCL makes bitwise identical on every rank
// (AllReduce, AllGather, Broadcast: trace::OutputIdenticalOnEveryRank), the ranks whose output hash
// differs. A strict majority that agrees names the others; without one (two equal halves, or every
// rank alone) the verdict is a tie that names every side. Hashes compare only at the same hash
// version over the same number of bytes: anything else is not the same computation. Incidents are
// gathered per culprit set, since a rank that is wrong again and again is a faulty GPU or link
// rather than one cosmic ray.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

#include "hang_detector/detectors/numerics_samples.h"

namespace ncclscope::hang_detector {
namespace {

constexpr size_t kMaxIncidentsListed = 8;  // incidents named in the summary
constexpr size_t kMaxIncidentLines = 6;    // incidents with evidence lines
constexpr size_t kMaxSideLines = 4;        // evidence lines per incident

using HashSide = std::vector<const RankSample*>;  // ranks that share one hash

struct Incident {
  const SampledCollective* at = nullptr;
  std::vector<HashSide> sides;  // largest first; for a majority, sides[0] is it
  bool tie = false;
  std::vector<int> culprits;  // outside the majority; every compared rank for a tie
};

// The incidents of one collective: one per (hash version, bytes hashed) whose ranks disagree.
void Compare(const SampledCollective& c, std::vector<Incident>* out) {
  if (!trace::OutputIdenticalOnEveryRank(c.op)) return;
  std::map<std::pair<uint32_t, uint64_t>, std::map<uint64_t, HashSide>> classes;
  for (const RankSample& r : c.ranks) {
    const trace::NumericsSample& s = *r.sample;
    if (s.hashed) classes[{s.hash_version, s.hash_bytes}][s.hash].push_back(&r);
  }
  for (auto& [what, by_hash] : classes) {
    if (by_hash.size() < 2) continue;  // one rank, or all agree
    Incident in;
    in.at = &c;
    size_t compared = 0;
    for (auto& [hash, side] : by_hash) {
      compared += side.size();
      in.sides.push_back(std::move(side));
    }
    std::stable_sort(in.sides.begin(), in.sides.end(), [](const HashSide& a, const HashSide& b) {
      return a.size() != b.size() ? a.size() > b.size() : a.front()->rank < b.front()->rank;
    });
    in.tie = in.sides[0].size() * 2 <= compared;
    for (size_t i = in.tie ? 0 : 1; i < in.sides.size(); ++i) {
      for (const RankSample* r : in.sides[i]) in.culprits.push_back(r->rank);
    }
    SortUnique(&in.culprits);
    out->push_back(std::move(in));
  }
}

std::string HashHex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

// "allreduce #12, #24, dp allgather #3": the operation (and communicator, where it changes from
// the verdict's) only where it changes.
std::string IncidentList(const Context& ctx, const std::vector<Incident>& incidents,
                         uint64_t comm_id) {
  std::string out;
  const SampledCollective* prev = nullptr;
  for (size_t i = 0; i < incidents.size() && i < kMaxIncidentsListed; ++i) {
    const SampledCollective& c = *incidents[i].at;
    if (i > 0) out += ", ";
    if (prev != nullptr && prev->comm_id == c.comm_id && prev->op == c.op) {
      out += "#" + std::to_string(c.seq);
    } else if (c.comm_id == comm_id) {
      out += std::string(trace::OpTypeName(c.op)) + " #" + std::to_string(c.seq);
    } else {
      out += CollectiveName(ctx, c);
    }
    prev = &c;
  }
  if (incidents.size() > kMaxIncidentsListed) {
    out += ", ... (" + std::to_string(incidents.size() - kMaxIncidentsListed) + " more)";
  }
  return out;
}

std::string SidesText(const Incident& in) {
  std::string out;
  for (size_t i = 0; i < in.sides.size(); ++i) {
    out += (i > 0 ? " vs " : "") + RankList(RanksOf(in.sides[i]));
  }
  return out;
}

std::string Summary(const Context& ctx, const std::vector<Incident>& incidents, const Verdict& v) {
  const Incident& first = incidents.front();
  std::string out;
  if (!first.tie) {
    out = v.culprits.size() == 1 ? RankList(v.culprits) + "'s output differs"
                                 : "the outputs of " + RankList(v.culprits) + " differ";
    out += " from the agreeing majority's (" + RankList(RanksOf(first.sides[0])) + ")";
  } else {
    out = first.sides.size() == 2 ? "the outputs split into two equal halves ("
                                  : "the outputs split with no majority (";
    out += SidesText(first) + "): nothing singles out the corrupt side";
  }
  out += ", where NCCL makes every rank's output bitwise identical; ";
  const size_t n = incidents.size();
  out += std::to_string(n) + (n == 1 ? " incident: " : " incidents: ") +
         IncidentList(ctx, incidents, v.comm_id);
  out += n == 1
             ? " (a single incident so far)"
             : " (repeated on the same " + std::string(v.culprits.size() == 1 ? "rank" : "ranks") +
                   ": a persistent fault, such as its GPU or a link)";
  return out;
}

void AddEvidence(const Context& ctx, const std::vector<Incident>& incidents, Verdict* v) {
  for (size_t i = 0; i < incidents.size() && i < kMaxIncidentLines; ++i) {
    const Incident& in = incidents[i];
    const std::string name = CollectiveName(ctx, *in.at);
    size_t lines = 0;
    for (size_t s = 0; s < in.sides.size() && lines < kMaxSideLines; ++s, ++lines) {
      const RankSample& r = *in.sides[s].front();
      const trace::NumericsSample& n = *r.sample;
      const std::string role = !in.tie && s == 0 ? "the majority, " : "";
      v->evidence.push_back(ctx.RecordEvidence(r.file, r.pos,
                                               "output of " + name + " hashed " + HashHex(n.hash) +
                                                   " over " + std::to_string(n.hash_bytes) +
                                                   " bytes (hash version " +
                                                   std::to_string(n.hash_version) + "), as on " +
                                                   role + RankList(RanksOf(in.sides[s]))));
    }
  }
}

}  // namespace

void CheckCorruptOutput(const Context& ctx, const std::vector<SampledCollective>& job,
                        std::vector<Verdict>* out) {
  std::vector<Incident> all;
  for (const SampledCollective& c : job) Compare(c, &all);
  // Per culprit set, in the order the sets first went wrong.
  std::vector<std::vector<Incident>> sets;
  for (Incident& in : all) {
    auto same = std::find_if(sets.begin(), sets.end(), [&](const std::vector<Incident>& s) {
      return s.front().tie == in.tie && s.front().culprits == in.culprits;
    });
    if (same == sets.end()) {
      sets.emplace_back().push_back(std::move(in));
    } else {
      same->push_back(std::move(in));
    }
  }
  std::stable_sort(sets.begin(), sets.end(), [](const auto& a, const auto& b) {
    return a.size() > b.size();  // most incidents first: the surest
  });
  for (const std::vector<Incident>& incidents : sets) {
    const Incident& first = incidents.front();
    Verdict v;
    v.cls = VerdictClass::kCorruptOutput;
    PlaceVerdictAt(ctx, *first.at, &v);
    v.culprits = first.culprits;
    v.tie = first.tie;
    AddUnseen(
        ctx, *first.at, [](const trace::NumericsSample& n) { return n.hashed; }, &v);
    v.summary = Summary(ctx, incidents, v);
    AddEvidence(ctx, incidents, &v);
    out->push_back(std::move(v));
  }
}

}  // namespace ncclscope::hang_detector
