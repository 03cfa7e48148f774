// The small shared helpers of the detectors: rank names, stall test, evidence lines.
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

namespace {

std::string RankName(int rank) {
  // Files without a known global rank are named by their position in the trace directory.
  return rank >= 0 ? std::to_string(rank) : "file" + std::to_string(-1 - rank);
}

// Index one past the run of equal steps starting at i: ranks i..end-1 form first, first + step, ...
size_t RunEnd(const std::vector<int>& ranks, size_t i) {
  if (i + 1 >= ranks.size() || ranks[i] < 0) return i + 1;
  const int step = ranks[i + 1] - ranks[i];
  if (step <= 0) return i + 1;
  size_t end = i + 2;
  while (end < ranks.size() && ranks[end] - ranks[end - 1] == step) ++end;
  return end;
}

}  // namespace

std::string RankList(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  bool strided = false;
  size_t pieces = 0;
  for (size_t i = 0; i < ranks.size(); ++pieces) {
    if (i > 0) out += ",";
    const size_t end = RunEnd(ranks, i);
    const int step = end > i + 1 ? ranks[i + 1] - ranks[i] : 0;
    // A run of 3+ neighbours reads "a-b", of 4+ with a stride "a-b:s" (Slurm's array notation):
    // the dp group of a 4096-rank job is then two ranges instead of 127 numbers.
    if ((step == 1 && end - i >= 3) || (step > 1 && end - i >= 4)) {
      out += RankName(ranks[i]) + "-" + RankName(ranks[end - 1]);
      if (step > 1) out += ":" + std::to_string(step);
      strided = strided || step > 1;
      i = end;
      continue;
    }
    out += RankName(ranks[i]);
    ++i;
  }
  // The count, where the ranges do not make it obvious.
  if ((strided || pieces > 1) && pieces < ranks.size() && ranks.size() >= 8) {
    out += " (" + std::to_string(ranks.size()) + " ranks)";
  }
  return out;
}

}  // namespace ncclscope::hang_detector
