// `ncclscope dump --json` output, parsed back into per-rank lists for assertions.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace ncclscope::testing {

struct RankDump {  // NOLINT(bugprone-exception-escape): a false positive on nlohmann::json members
  nlohmann::json header;
  std::vector<nlohmann::json> comms;
  std::vector<nlohmann::json> records;  // the calls the rank made, in order
  // What the profiler-plugin side wrote (profiler_attach, device_start): events, not calls.
  std::vector<nlohmann::json> profiler_records;
  // The names of NVTX contexts (nvtx_phase_name, nvtx_range_name): what records' step/phase use.
  std::vector<nlohmann::json> nvtx_names;
  // What NCCLSCOPE_NUMERICS found in sampled collectives (numerics records).
  std::vector<nlohmann::json> numerics;
};

// Keyed by global rank. Fails the calling test (ADD_FAILURE) on a line that is not JSON.
std::map<int, RankDump> ParseDump(const std::string& json_lines);

}  // namespace ncclscope::testing
