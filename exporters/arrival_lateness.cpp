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
  c.incomplete[seq].push_back({member, wait_s, duration_s});
  while (c.incomplete.size() > kMaxIncomplete) c.incomplete.erase(c.incomplete.begin());
}

void ArrivalLateness::Settle() {
  for (auto& [id, c] : comms_) {
    for (auto it = c.incomplete.begin(); it != c.incomplete.end();) {
      const std::vector<Arrival>& arrivals = it->second;
      const bool complete =
          !c.members.empty() &&
          std::all_of(c.members.begin(), c.members.end(), [&arrivals](uint32_t m) {
            return std::any_of(arrivals.begin(), arrivals.end(),
                               [m](const Arrival& a) { return a.member == m; });
          });
      if (!complete) {
        ++it;
        continue;
      }
      std::vector<Arrival> members_only;
      for (const Arrival& a : arrivals) {
        if (std::binary_search(c.members.begin(), c.members.end(), a.member)) {
          members_only.push_back(a);
        }
      }
      Finish(c, std::move(members_only));
      it = c.incomplete.erase(it);
    }
  }
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
