// PyTorch Flight Recorder dumps in their JSON form, the text torch's _dump_nccl_trace_json returns
// (FlightRecorder<EventType>::dump_json in torch/csrc/distributed/c10d/FlightRecorderDetail.hpp).
// Reading turns the text into the value tree DecodeFrDump reads, so one decoder serves the pickle
// and the JSON form; writing turns EncodeFrDump's tree into the JSON typing (dump_json writes
// tuples as lists and leaves out the pickle's memoized frames). Uses nlohmann::json, so it is for
// the analysis tools only, never for the library inside the training process.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "trace/flight_recorder/fr_dump.h"
#include "trace/flight_recorder/pickle_value.h"

namespace ncclscope::flight_recorder {

// The deepest nesting ParseFrJson accepts. A torch dump nests 5 levels (top, entries, an entry,
// input_sizes, one tensor's dims); the limit stops hostile text long before anything is at risk.
inline constexpr int kFrJsonMaxDepth = 64;

// `text` as a value tree: objects -> dict with str keys in document order (a repeated key keeps
// its first place and its last value, as Python's json.loads), arrays -> list, strings -> str,
// integers -> int, other numbers -> float, true/false -> bool, null -> None. The top level must be
// an object. On failure returns nullopt with *error saying where: the byte (nlohmann's count of
// bytes read, so 1 is the first) and the place inside the document for malformed text, invalid
// UTF-8 and numbers outside double (nlohmann's parse errors); the place for an integer outside
// int64 or nesting deeper than kFrJsonMaxDepth, e.g. "entries[0].op_id: integer 9223372036854775808
// is outside int64". Memory is linear in the text's size. Never throws. Pure; thread-safe.
std::optional<PickleValue> ParseFrJson(std::string_view text, std::string* error);

// The JSON torch's dump_json writes for `dump`: compact, object keys sorted (its nlohmann::json
// objects are std::maps, so pg_config and pg_status come out in key order too), keys per
// dump.version as EncodeFrDump picks them, with the JSON typing: process_group a 2-element list,
// absent time_discovered_* as 0, pg_status values as decimal strings, pg_config ranks as "[0, 1]",
// no "entries" when there are none, no frames. Non-ASCII text stays UTF-8; bytes that are not
// UTF-8 become U+FFFD (torch's dump would throw instead). Pure; thread-safe.
std::string EncodeFrDumpJson(const FrDump& dump);

}  // namespace ncclscope::flight_recorder
