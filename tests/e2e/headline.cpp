#include "tests/e2e/headline.h"

namespace ncclscope::testing {

std::ostream& operator<<(std::ostream& os, const Headline& h) {
  os << h.cls << " " << h.comm << " #" << h.seq << " culprits";
  for (int r : h.culprits) os << " " << r;
  return os;
}

Headline HeadlineOf(const nlohmann::json& analysis) {
  Headline h;
  if (!analysis.is_object() || !analysis.contains("verdicts") || analysis["verdicts"].empty()) {
    return h;
  }
  const auto& v = analysis["verdicts"][0];
  h.cls = v.value("class", "");
  h.comm = v.value("comm_name", "");
  h.seq = v.value("seq", uint64_t{0});
  h.culprits = v.value("culprits", std::vector<int>{});
  return h;
}

}  // namespace ncclscope::testing
