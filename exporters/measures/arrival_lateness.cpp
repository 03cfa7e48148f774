#include "exporters/measures/arrival_lateness.h"

#include <algorithm>

namespace ncclscope::exporters {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

// Median of `sorted` (ascending) without one copy of x, which it holds: O(log n), so scoring every
// member of a 64-rank collective against the others stays cheap.
double MedianWithout(const std::vector<double>& sorted, double x) {
  const size_t n = sorted.size() - 1;  // what is left
  if (n == 0) return 0;
  const auto gone =
      static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), x) - sorted.begin());
  auto at = [&](size_t k) { return k < gone ? sorted[k] : sorted[k + 1]; };
  return n % 2 == 1 ? at(n / 2) : (at(n / 2 - 1) + at(n / 2)) / 2;
}

}  // namespace

std::vector<double> CollectiveLateness(const std::vector<double>& waits) {
  std::vector<double> lateness(waits.size(), 0.0);
  if (waits.size() < 2) return lateness;  // nobody to be late against
  std::vector<double> sorted = waits;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < waits.size(); ++i) {
    lateness[i] = std::max(0.0, MedianWithout(sorted, waits[i]) - waits[i]);
  }
  return lateness;
}

void ArrivalLateness::SetMembers(uint64_t comm, std::vector<uint32_t> members) {
  std::sort(members.begin(), members.end());
  Comm& c = comms_[comm];
  c.members = std::move(members);
  IndexMembers(c);
}

void ArrivalLateness::IndexMembers(Comm& c) {
  c.is_member.assign(c.members.empty() ? 0 : size_t{c.members.back()} + 1, 0);
  for (uint32_t m : c.members) c.is_member[m] = 1;
}

void ArrivalLateness::Completed(uint64_t comm, uint64_t seq, uint32_t member, double wait_s,
                                double duration_s) {
  Comm& c = comms_[comm];
  std::vector<Arrival>& arrivals = Slot(c, seq);
  if (arrivals.empty()) arrivals.reserve(c.members.size());  // one allocation per collective
  arrivals.push_back({member, wait_s, duration_s});
  while (c.incomplete.size() > kMaxIncomplete) {
    if (c.has_last && c.last == c.incomplete.begin()) c.has_last = false;
    c.incomplete.erase(c.incomplete.begin());
  }
}

std::vector<ArrivalLateness::Arrival>& ArrivalLateness::Slot(Comm& c, uint64_t seq) {
  // Thousands of completions per scrape land here: a map search for each was the largest cost
  // of a scrape (docs/performance.md, "Exporter scrape"); the hint makes most of them O(1).
  if (c.has_last) {
    if (c.last->first == seq) return c.last->second;
    const auto next = std::next(c.last);
    if (c.last->first < seq && (next == c.incomplete.end() || next->first >= seq)) {
      c.last = next != c.incomplete.end() && next->first == seq
                   ? next
                   : c.incomplete.emplace_hint(next, seq, std::vector<Arrival>{});
      return c.last->second;
    }
  }
  c.last = c.incomplete.try_emplace(seq).first;
  c.has_last = true;
  return c.last->second;
}

void ArrivalLateness::Settle() {
  for (auto& [id, c] : comms_) {
    // Only the newest kLatenessWindow complete collectives are kept, so a scrape that finds
    // thousands complete scores just those.
    std::vector<Incomplete::iterator> complete;
    for (auto it = c.incomplete.begin(); it != c.incomplete.end(); ++it) {
      if (IsComplete(c, it->second)) complete.push_back(it);
    }
    const size_t skip = complete.size() > kLatenessWindow ? complete.size() - kLatenessWindow : 0;
    for (size_t i = 0; i < complete.size(); ++i) {
      if (i >= skip) Finish(c, std::move(complete[i]->second));
      if (c.has_last && c.last == complete[i]) c.has_last = false;
      c.incomplete.erase(complete[i]);
    }
    if (c.window_changed) Summarize(c);
  }
}

bool ArrivalLateness::IsComplete(const Comm& c, const std::vector<Arrival>& arrivals) {
  // Each member reports a collective once: fewer arrivals than members is incomplete, the common
  // case, decided without looking at who arrived.
  if (c.members.empty() || arrivals.size() < c.members.size()) return false;
  size_t found = 0;
  for (const Arrival& a : arrivals) found += IsMember(c, a.member) ? 1 : 0;
  return found >= c.members.size();
}

void ArrivalLateness::Finish(Comm& c, std::vector<Arrival> arrivals) {
  // Members only (a file that left the communicator's visible members no longer counts).
  arrivals.erase(std::remove_if(arrivals.begin(), arrivals.end(),
                                [&c](const Arrival& a) { return !IsMember(c, a.member); }),
                 arrivals.end());
  if (arrivals.size() < 2) return;  // nobody to be late against
  std::vector<double> waits;
  std::vector<double> durations;
  for (const Arrival& a : arrivals) {
    waits.push_back(a.wait_s);
    durations.push_back(a.duration_s);
  }
  const std::vector<double> lateness = CollectiveLateness(waits);
  Sample s;
  for (size_t i = 0; i < arrivals.size(); ++i)
    s.lateness.emplace_back(arrivals[i].member, lateness[i]);
  std::sort(s.lateness.begin(), s.lateness.end());
  s.duration_s = Median(durations);
  c.window.push_back(std::move(s));
  if (c.window.size() > kLatenessWindow) c.window.pop_front();
  c.window_changed = true;
}

void ArrivalLateness::Summarize(Comm& c) {
  c.window_changed = false;
  c.results.clear();
  if (c.window.empty()) return;
  // Every member any sample names, sorted; then each member's lateness in every sample that
  // names it (the first entry when a sample names it twice, as a lookup by member finds).
  std::vector<uint32_t> ids;
  std::vector<uint32_t> merged;
  std::vector<double> durations;
  for (const Sample& s : c.window) {
    durations.push_back(s.duration_s);
    merged.clear();
    auto a = ids.begin();
    for (const auto& [member, late] : s.lateness) {
      while (a != ids.end() && *a < member) merged.push_back(*a++);
      if (a != ids.end() && *a == member) ++a;
      if (merged.empty() || merged.back() != member) merged.push_back(member);
    }
    merged.insert(merged.end(), a, ids.end());
    ids.swap(merged);
  }
  std::vector<std::vector<double>> lateness(ids.size());
  for (const Sample& s : c.window) {
    size_t k = 0;
    for (size_t i = 0; i < s.lateness.size(); ++i) {
      if (i > 0 && s.lateness[i].first == s.lateness[i - 1].first) continue;
      while (ids[k] != s.lateness[i].first) ++k;
      lateness[k].push_back(s.lateness[i].second);
    }
  }
  const double duration = Median(std::move(durations));
  c.results.reserve(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) {
    Lateness out;
    out.seconds = Median(std::move(lateness[k]));
    out.score = duration > 0 ? std::min(1.0, out.seconds / duration) : 0;
    c.results.emplace_back(ids[k], out);
  }
}

Lateness ArrivalLateness::Of(uint64_t comm, uint32_t member) const {
  const auto it = comms_.find(comm);
  if (it == comms_.end()) return {};
  const auto& results = it->second.results;
  const auto m = std::lower_bound(
      results.begin(), results.end(), member,
      [](const std::pair<uint32_t, Lateness>& r, uint32_t id) { return r.first < id; });
  return m != results.end() && m->first == member ? m->second : Lateness{};
}

void ArrivalLateness::ForgetMember(uint32_t member) {
  for (auto& [id, c] : comms_) {
    c.members.erase(std::remove(c.members.begin(), c.members.end(), member), c.members.end());
    IndexMembers(c);
  }
}

}  // namespace ncclscope::exporters
