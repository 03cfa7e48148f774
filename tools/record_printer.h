// Formats ring contents for people (one line of text each) and for programs (one JSON object each).
// Pure functions of their arguments; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>

#include "trace/nvtx_names.h"
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

// The NVTX context names a file's records use (trace/record.h, "NVTX context").
trace::NvtxNames NvtxNamesOf(const trace::RingSnapshot& file);
// Appends what NVTX tells of a record: " step=12 phase=collectives range=..." for an operation,
// " context=3 name=..." for a name record; nothing when nothing is known.
void AppendNvtxText(const trace::NvtxNames& nvtx, const trace::StoredRecord& record,
                    std::string* line);
// The same as JSON members ("step", "phase", "range"; "context", "name").
void AppendNvtxJson(const trace::NvtxNames& nvtx, const trace::StoredRecord& record,
                    nlohmann::json* out);

}  // namespace ncclscope::tools
