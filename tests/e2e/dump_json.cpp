#include "tests/e2e/dump_json.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

namespace ncclscope::testing {
namespace {

// Records the probe writes from the profiler plugin's and CUPTI's events, not one per NCCL call.
bool IsWrittenByTheProfiler(const std::string& op) {
  static const std::set<std::string> kOps = {
      "profiler_attach", "device_start",  "p2p_device_start", "proxy_progress",
      "kernel_channels", "profiler_mask", "device_compute",   "device_activity_loss"};
  return kOps.count(op) != 0;
}

}  // namespace

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
    } else if (j.at("op") == "numerics") {
      r.numerics.push_back(j);
    } else if (j.at("op") == "nvtx_phase_name" || j.at("op") == "nvtx_range_name") {
      r.nvtx_names.push_back(j);
    } else if (IsWrittenByTheProfiler(j.at("op"))) {
      r.profiler_records.push_back(j);
    } else {
      r.records.push_back(j);
    }
  }
  return ranks;
}

}  // namespace ncclscope::testing
