// The metric contract (docs/metrics.md) in code: names, types, help texts and labels, built from a
// NodeView at scrape time. Pure; thread-safe.
#pragma once

#include <vector>

#include <prometheus/metric_family.h>

#include "exporters/prometheus/node_view.h"

namespace ncclscope::exporters {

std::vector<prometheus::MetricFamily> RenderFamilies(const NodeView& view);

}  // namespace ncclscope::exporters
