#include "tests/exporters/scrape_text.h"

#include <prometheus/text_serializer.h>

#include <sstream>

#include "exporters/prometheus/metric_families.h"

namespace ncclscope::testing {

std::string Scrape(exporters::NodeAggregator& aggregator, const hang_detector::Analysis* analysis,
                   int64_t now_ns, std::optional<exporters::IncidentCounts> incidents) {
  aggregator.Refresh(now_ns);
  exporters::NodeView view = aggregator.View(analysis);
  view.incidents = incidents;
  return prometheus::TextSerializer().Serialize(exporters::RenderFamilies(view));
}

std::optional<double> Value(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return std::nullopt;
}

double Sum(const std::string& text, const std::string& name,
           const std::map<std::string, std::string>& labels) {
  std::istringstream in(text);
  std::string line;
  double sum = 0;
  while (std::getline(in, line)) {
    if (line.compare(0, name.size(), name) != 0) continue;
    if (line.size() <= name.size() || (line[name.size()] != '{' && line[name.size()] != ' ')) {
      continue;
    }
    bool match = true;
    for (const auto& [label, value] : labels) {
      const std::string pair = label + "=\"" + value + "\"";
      match = match && (line.find("{" + pair) != std::string::npos ||
                        line.find("," + pair) != std::string::npos);
    }
    if (match) sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

}  // namespace ncclscope::testing
