// An Analysis as the JSON document of `ncclscope analyze --json`, also written by the in-process
// watchdog as verdict.json, so both have one schema. Pure; thread-safe. libstdc++ only.
#pragma once

#include <cstdint>
#include <string>

#include "hang_detector/verdicts/verdict.h"

namespace ncclscope::hang_detector {

// indent as JsonWriter's (2: the CLI's pretty form). Ends without a newline.
std::string RenderJson(const Analysis& analysis, int indent = 2);
// The same document for an incident that went away: "stage" is "resolved" and
// "resolved_after_s" says how long the wait lasted. The watchdog writes it over its verdict.json
// so a stale suspect or hang never lingers in the directory of a job that carried on.
std::string RenderResolvedJson(const Analysis& analysis, double resolved_after_s, int indent = 2);

// A communicator id as the CLI prints it: 16 lower-case hex digits.
std::string HexCommId(uint64_t id);

}  // namespace ncclscope::hang_detector
