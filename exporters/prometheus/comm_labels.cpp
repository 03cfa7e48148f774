#include "exporters/prometheus/comm_labels.h"

namespace ncclscope::exporters {

const std::string& CommLabels::Label(const std::string& name) {
  const auto it = labels_.find(name);
  if (it != labels_.end()) return it->second;
  if (kept_ >= max_) return other_;
  ++kept_;
  return labels_.emplace(name, name).first->second;
}

}  // namespace ncclscope::exporters
