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

}  // namespace

void ArrivalLateness::SetMembers(uint64_t comm, std::vector<uint32_t> members) {
  std::sort(members.begin(), members.end());
  comms_[comm].members = std::move(members);
}

void ArrivalLateness::Completed(uint64_t comm, uint64_t seq, uint32_t member, double wait_s,
                                double duration_s) {
  Comm& c = comms_[comm];
  if (!std::binary_search(c.members.begin(), c.members.end(), member)) return;
  std::vector<Arrival>& arrivals = c.incomplete[seq];
  arrivals.push_back({member, wait_s, duration_s});
  size_t present = 0;
  for (uint32_t m : c.members) {
    present += std::any_of(arrivals.begin(), arrivals.end(),
                           [m](const Arrival& a) { return a.member == m; })
                   ? 1
                   : 0;
  }
  if (present == c.members.size()) {
    std::vector<Arrival> done = std::move(arrivals);
    c.incomplete.erase(seq);
    Finish(c, std::move(done));
  }
  while (c.incomplete.size() > kMaxIncomplete) c.incomplete.erase(c.incomplete.begin());
}

void ArrivalLateness::Finish(Comm& c, std::vector<Arrival> arrivals) {
  if (arrivals.size() < 2) return;  // nobody to be late against
  Sample s;
  std::vector<double> waits;
  std::vector<double> durations;
  for (const Arrival& a : arrivals) {
    waits.push_back(a.wait_s);
    durations.push_back(a.duration_s);
  }
  for (size_t i = 0; i < arrivals.size(); ++i) {
    std::vector<double> others;
    for (size_t j = 0; j < arrivals.size(); ++j) {
      if (j != i) others.push_back(waits[j]);
    }
    s.lateness.emplace_back(arrivals[i].member, std::max(0.0, Median(others) - waits[i]));
  }
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
    for (const auto& [m, l] : s.lateness) {
      if (m == member) lateness.push_back(l);
    }
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
