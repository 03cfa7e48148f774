// The Flight Recorder dump the FR fuzz targets start from: two process groups, a completed
// all_reduce, a scheduled one and a scheduled send, with every field a version has.
#pragma once

#include <string>

#include "trace/flight_recorder/fr_dump.h"

namespace ncclscope::flight_recorder::fuzzing {

// `frames`: stack frames on every entry (pickle dumps only); `awkward`: profiling names with
// quotes, a backslash, a control character and non-ASCII text (what JSON must escape).
FrDump SeedDump(const std::string& version, bool frames, bool awkward);

}  // namespace ncclscope::flight_recorder::fuzzing
