// Formats ring contents for people (one line of text each) and for programs (one JSON object each).
// Pure functions of their arguments; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>

#include "trace/ring_reader.h"

namespace ncclscope::tools {

using CommNames = std::unordered_map<uint64_t, std::string>;
CommNames CommNamesOf(const trace::RingSnapshot& file);
// 64-bit ids print as fixed-width hex: JSON numbers lose precision above 2^53.
std::string HexId(uint64_t id);

std::string HeaderText(const trace::RingSnapshot& file);
std::string CommText(const trace::CommInfo& comm);
std::string RecordText(const trace::RingSnapshot& file, const CommNames& names,
                       const trace::StoredRecord& record);

nlohmann::json HeaderJson(const trace::RingSnapshot& file);
nlohmann::json CommJson(const trace::RingSnapshot& file, const trace::CommInfo& comm);
nlohmann::json RecordJson(const trace::RingSnapshot& file, const CommNames& names,
                          const trace::StoredRecord& record);

}  // namespace ncclscope::tools
