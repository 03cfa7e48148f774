// The small shared helpers of the detectors: stall test, evidence lines, rank words.
#include <algorithm>
#include <cstdio>

#include "hang_detector/detectors/detectors.h"

namespace ncclscope::hang_detector {

bool Context::Stalled(uint32_t file, uint32_t pos) const {
  const RankFile& f = index.files()[file];
  return SinceS(f.Wall(f.At(pos).t_enter_ns)) >= options.stall_s;
}

int Context::RankOf(uint32_t file) const {
  const int r = index.files()[file].rank;
  return r >= 0 ? r : -1 - static_cast<int>(file);
}

int Context::FileOf(int rank) const {
  for (uint32_t f = 0; f < index.files().size(); ++f) {
    if (RankOf(f) == rank) return static_cast<int>(f);
  }
  return -1;
}

bool Context::BlockedElsewhere(int rank, const Verdict& v) const {
  const int f = FileOf(rank);
  if (f < 0) return false;
  // A dead or frozen rank's pending records wait for nothing: the rank itself is the cause.
  const Liveness l = live[f].state;
  if (l != Liveness::kAlive && l != Liveness::kEnded && l != Liveness::kAborted) return false;
  const RankFile& file = index.files()[f];
  if (file.oldest_waiting_pos == kNoRecord ||
      SinceS(file.Wall(file.oldest_waiting_enter)) < options.stall_s) {
    return false;
  }
  const uint64_t record = file.IndexOf(file.oldest_waiting_pos);
  return std::none_of(v.evidence.begin(), v.evidence.end(), [&](const Evidence& e) {
    return e.has_record && e.rank == rank && e.record_index == record;
  });
}

Evidence Context::RecordEvidence(uint32_t file, uint32_t pos, const std::string& what) const {
  const RankFile& f = index.files()[file];
  Evidence e;
  e.rank = RankOf(file);
  e.record_index = f.IndexOf(pos);
  e.text = what;
  return e;
}

std::string Context::Ago(int64_t wall) const {
  char buf[64];
  std::snprintf(buf, sizeof(buf),
                post_mortem ? "%.1f s before the job's last heartbeat" : "%.1f s ago",
                std::max(0.0, SinceS(wall)));
  return buf;
}

std::string Context::CommName(const CommModel& c) const {
  if (!c.name.empty()) return c.name;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(c.id));
  return buf;
}

void SortUnique(std::vector<int>* ranks) {
  std::sort(ranks->begin(), ranks->end());
  ranks->erase(std::unique(ranks->begin(), ranks->end()), ranks->end());
}

std::string RanksWait(const std::vector<int>& ranks) {
  if (ranks.empty()) return "nobody waits";
  return RankList(ranks) + (ranks.size() == 1 ? " waits" : " wait");
}

}  // namespace ncclscope::hang_detector
