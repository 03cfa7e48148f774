#include "tests/exporters/snapshot_source.h"

#include <algorithm>

namespace ncclscope::testing {

std::vector<std::string> SnapshotSource::List(std::string* error) {
  std::vector<std::string> names;
  for (const trace::RingSnapshot& s : set.files) names.push_back(s.path);
  std::sort(names.begin(), names.end());
  return names;
}

bool SnapshotSource::Visit(const std::string& name, uint64_t first, trace::RingVisitor* visitor,
                           std::string* error) {
  for (const trace::RingSnapshot& s : set.files) {
    if (s.path != name) continue;
    trace::RingInfo info = s;
    if (!s.records.empty()) {
      info.overwritten = std::max(info.overwritten, s.records.front().index);
      info.write_pos = std::max(info.write_pos, s.records.back().index + 1);
    }
    visitor->BeginFile(info);
    for (const trace::StoredRecord& r : s.records) {
      if (r.index >= first) visitor->Records(&r, 1);
    }
    visitor->EndFile(info);
    return true;
  }
  *error = name + ": cannot open: No such file or directory";
  return false;
}

}  // namespace ncclscope::testing
