#include "exporters/arrival_lateness.h"

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

void ArrivalLateness::SetMembers(uint64_t comm, std::vector<uint32_t> members) {
  std::sort(members.begin(), members.end());
  comms_[comm].members = std::move(members);
}

void ArrivalLateness::Completed(uint64_t comm, uint64_t seq, uint32_t member, double wait_s,
                                double duration_s) {
  Comm& c = comms_[comm];
  std::vector<Arrival>& arrivals = c.incomplete[seq];
  if (arrivals.empty()) arrivals.reserve(c.members.size());  // one allocation per collective
  arrivals.push_back({member, wait_s, duration_s});
  while (c.incomplete.size() > kMaxIncomplete) c.incomplete.erase(c.incomplete.begin());
}

void ArrivalLateness::Settle() {
  for (auto& [id, c] : comms_) {
    // Only the newest kLatenessWindow complete collectives are kept, so a scrape that finds
    // thousands complete scores just those.
    std::vector<std::map<uint64_t, std::vector<Arrival>>::iterator> complete;
    for (auto it = c.incomplete.begin(); it != c.incomplete.end(); ++it) {
      if (IsComplete(c, it->second)) complete.push_back(it);
    }
    const size_t skip = complete.size() > kLatenessWindow ? complete.size() - kLatenessWindow : 0;
    for (size_t i = 0; i < complete.size(); ++i) {
      if (i >= skip) Finish(c, std::move(complete[i]->second));
      c.incomplete.erase(complete[i]);
    }
  }
}

bool ArrivalLateness::IsComplete(const Comm& c, std::vector<Arrival>& arrivals) {
  // Each member reports a collective once: fewer arrivals than members is incomplete, the common
  // case, decided without looking at who arrived.
  if (c.members.empty() || arrivals.size() < c.members.size()) return false;
  std::sort(arrivals.begin(), arrivals.end(),
            [](const Arrival& a, const Arrival& b) { return a.member < b.member; });
  size_t found = 0;
  for (const Arrival& a : arrivals) {
    found += std::binary_search(c.members.begin(), c.members.end(), a.member) ? 1 : 0;
  }
  return found >= c.members.size();
}

void ArrivalLateness::Finish(Comm& c, std::vector<Arrival> arrivals) {
  // Members only (a file that left the communicator's visible members no longer counts).
  arrivals.erase(std::remove_if(arrivals.begin(), arrivals.end(),
                                [&c](const Arrival& a) {
                                  return !std::binary_search(c.members.begin(), c.members.end(),
                                                             a.member);
                                }),
                 arrivals.end());
  if (arrivals.size() < 2) return;  // nobody to be late against
  std::vector<double> waits;
  std::vector<double> durations;
  for (const Arrival& a : arrivals) {
    waits.push_back(a.wait_s);
    durations.push_back(a.duration_s);
  }
  std::vector<double> sorted = waits;
  std::sort(sorted.begin(), sorted.end());
  Sample s;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    s.lateness.emplace_back(arrivals[i].member,
                            std::max(0.0, MedianWithout(sorted, waits[i]) - waits[i]));
  }
  std::sort(s.lateness.begin(), s.lateness.end());
  s.duration_s = Median(durations);
  c.window.push_back(std::move(s));
  if (c.window.size() > kLatenessWindow) c.window.pop_front();
}

Lateness ArrivalLateness::Of(uint64_t comm, uint32_t member) const {
  const auto it = comms_.find(comm);
  if (it == comms_.end() || it->second.window.empty()) return {};
  std::vector<double> lateness;
  std::vector<double> durations;
  for (const Sample& s : it->second.window) {
    durations.push_back(s.duration_s);
    const auto m =
        std::lower_bound(s.lateness.begin(), s.lateness.end(), std::make_pair(member, -1.0));
    if (m != s.lateness.end() && m->first == member) lateness.push_back(m->second);
  }
  Lateness out;
  out.seconds = Median(lateness);
  const double duration = Median(durations);
  out.score = duration > 0 ? std::min(1.0, out.seconds / duration) : 0;
  return out;
}

void ArrivalLateness::ForgetMember(uint32_t member) {
  for (auto& [id, c] : comms_) {
    c.members.erase(std::remove(c.members.begin(), c.members.end(), member), c.members.end());
  }
}

}  // namespace ncclscope::exporters
