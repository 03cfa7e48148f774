#include "exporters/timeline/timeline_options.h"

#include <charconv>
#include <string_view>

namespace ncclscope::exporters::timeline {

namespace {

bool ParseRank(std::string_view s, int* out) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && *out >= 0;
}

}  // namespace

bool ParseRankList(const std::string& text, std::vector<std::pair<int, int>>* out,
                   std::string* error) {
  out->clear();
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    const size_t dash = part.find('-');
    int lo = 0;
    int hi = 0;
    const bool ok = dash == std::string_view::npos
                        ? ParseRank(part, &lo) && ParseRank(part, &hi)
                        : ParseRank(part.substr(0, dash), &lo) &&
                              ParseRank(part.substr(dash + 1), &hi) && lo <= hi;
    if (!ok) {
      *error = "'" + std::string(part) + "' in '" + text +
               "' is not a rank or a range of ranks such as 0-63";
      return false;
    }
    out->emplace_back(lo, hi);
    if (comma == std::string_view::npos) return true;
    rest = rest.substr(comma + 1);
  }
}

bool RankSelected(const TimelineOptions& options, int rank) {
  if (options.ranks.empty()) return true;
  for (const auto& [lo, hi] : options.ranks) {
    if (rank >= lo && rank <= hi) return true;
  }
  return false;
}

}  // namespace ncclscope::exporters::timeline
