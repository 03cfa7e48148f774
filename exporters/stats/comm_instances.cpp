#include "exporters/stats/comm_instances.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

// RankList: the notation of analyze's verdicts, so a communicator reads the same in every output.
#include "hang_detector/verdicts/rank_list.h"

namespace ncclscope::exporters {

void LabelCommInstances(std::vector<CommInstance>* comms) {
  std::map<std::string, size_t> uses;
  for (CommInstance& c : *comms) {
    c.label = c.name;
    if (!c.members.empty()) {
      c.label += " (" + hang_detector::RankList(c.members);
      const auto seen = static_cast<int>(c.members.size());
      if (c.nranks > seen) c.label += "; " + std::to_string(c.nranks - seen) + " unseen";
      c.label += ")";
    }
    ++uses[c.label];
  }
  for (CommInstance& c : *comms) {
    if (uses[c.label] < 2) continue;
    char id[16];  // the id's first 8 hex digits, as analyze shortens it
    std::snprintf(id, sizeof id, "id %08" PRIx64, c.id >> 32);
    if (c.members.empty()) {
      c.label += std::string(" (") + id + ")";
    } else {
      c.label.insert(c.label.size() - 1, std::string(", ") + id);
    }
  }
}

const CommInstance* FindCommInstance(const std::vector<CommInstance>& comms, uint64_t id) {
  const auto it = std::lower_bound(comms.begin(), comms.end(), id,
                                   [](const CommInstance& c, uint64_t v) { return c.id < v; });
  return it != comms.end() && it->id == id ? &*it : nullptr;
}

}  // namespace ncclscope::exporters
