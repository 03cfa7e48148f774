// The headline of an analysis, as the catalogue tests compare it across ways of reading one job
// (gathered ring files, node digests, Flight Recorder dumps): the first verdict's class,
// communicator, sequence number and culprits.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace ncclscope::testing {

struct Headline {
  std::string cls, comm;
  uint64_t seq = 0;
  std::vector<int> culprits;
  bool operator==(const Headline&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Headline& h);

// The headline of `ncclscope analyze --json`'s output; empty when it has no verdict.
Headline HeadlineOf(const nlohmann::json& analysis);

}  // namespace ncclscope::testing
