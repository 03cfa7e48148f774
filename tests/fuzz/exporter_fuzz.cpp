// Fuzz target: any bytes served to the exporter as a ring file, read twice as two scrapes do
// (incremental cursor, revisits), then rendered and serialized, and read by `ncclscope stats`'
// cost table: a count or an error, never a crash.
#include <prometheus/text_serializer.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "exporters/prometheus/metric_families.h"
#include "exporters/prometheus/node_aggregator.h"
#include "exporters/sources/ring_source.h"
#include "exporters/stats/cost_table.h"
#include "tests/fuzz/bytes_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ncclscope::testing::BytesSource source(data, size);
  ncclscope::exporters::AggregatorOptions options;
  options.log_errors = false;
  ncclscope::exporters::NodeAggregator aggregator(&source, options);
  for (int scrape = 0; scrape < 2; ++scrape) {
    aggregator.Refresh(scrape);
    const std::string text = prometheus::TextSerializer().Serialize(
        ncclscope::exporters::RenderFamilies(aggregator.View(nullptr)));
    if (text.find("ncclscope_exporter_ring_files") == std::string::npos) __builtin_trap();
  }
  ncclscope::exporters::CostTable table;
  std::string error;
  if (!ncclscope::exporters::BuildCostTable(source, &table, &error)) __builtin_trap();  // listed
  if (table.files + table.errors.size() != 1) __builtin_trap();
  return 0;
}
