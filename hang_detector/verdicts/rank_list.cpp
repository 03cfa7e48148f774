#include "hang_detector/verdicts/rank_list.h"

#include <cstddef>

namespace ncclscope::hang_detector {

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
