#include "tests/e2e/dump_json.h"

#include <gtest/gtest.h>

#include <sstream>

namespace ncclscope::testing {

std::map<int, RankDump> ParseDump(const std::string& json_lines) {
  std::map<int, RankDump> ranks;
  std::istringstream in(json_lines);
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      ADD_FAILURE() << "dump line " << line_number << " is not JSON: " << line;
      continue;
    }
    RankDump& r = ranks[j.at("rank").get<int>()];
    const std::string type = j.at("type");
    if (type == "header") {
      r.header = j;
    } else if (type == "comm") {
      r.comms.push_back(j);
    } else if (j.at("op") == "nvtx_phase_name" || j.at("op") == "nvtx_range_name") {
      r.nvtx_names.push_back(j);
    } else if (j.at("op") == "profiler_attach" || j.at("op") == "device_start") {
      r.profiler_records.push_back(j);
    } else {
      r.records.push_back(j);
    }
  }
  return ranks;
}

}  // namespace ncclscope::testing
