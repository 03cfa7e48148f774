// A scrape as a user sees it: the exposition text, and the value of one series in it.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "exporters/prometheus/node_aggregator.h"

namespace ncclscope::testing {

// Refresh, view and serialize, as one GET /metrics does (without HTTP, verdicts and incident
// counts unless given); now_ns: the exporter's monotonic clock.
std::string Scrape(exporters::NodeAggregator& aggregator,
                   const hang_detector::Analysis* analysis = nullptr, int64_t now_ns = 0,
                   std::optional<exporters::IncidentCounts> incidents = std::nullopt);

// The value of the series written exactly as `series` (name and labels as serialized, e.g.
// `ncclscope_rank_up{rank="1"}`), nullopt when absent.
std::optional<double> Value(const std::string& text, const std::string& series);

// Sum of every sample of `name` (no histogram suffixes) whose labels contain all of `labels`
// (`rank="0"` style fragments).
double Sum(const std::string& text, const std::string& name,
           const std::map<std::string, std::string>& labels = {});

}  // namespace ncclscope::testing
