#include "exporters/timeline/rank_records.h"

#include <fmt/format.h>

namespace ncclscope::exporters::timeline {

bool CommMatches(const trace::CommInfo& c, const std::string& wanted) {
  if (wanted.empty() || c.name == wanted) return true;
  if (wanted.size() < 4) return false;
  const std::string hex = fmt::format("{:016x}", c.id);
  return hex.compare(0, wanted.size(), wanted) == 0;
}

}  // namespace ncclscope::exporters::timeline
