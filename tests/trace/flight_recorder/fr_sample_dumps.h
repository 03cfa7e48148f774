// FR dumps of versions 2.2, 2.4, 2.7 and 2.10 written out by hand from torch's dumper
// (c10d/NCCLUtils.hpp and FlightRecorderDetail.hpp, getCollectiveTrace and dump_dict: keys and
// their order), each as the value
// tree torch pickles and as the FrDump it means. Built without EncodeFrDump, so the tests compare
// the codec with an independent statement of the format.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>

#include "trace/flight_recorder/fr_dump.h"
#include "trace/flight_recorder/pickle_value.h"

namespace ncclscope::flight_recorder::testing {

// A dict literal: D({{"a", 1}, {"b", "x"}}).
PickleDict D(std::initializer_list<std::pair<const char*, PickleValue>> items);

// Two process groups, a status, and two entries: a completed all_reduce with a duration and
// stack frames, and a scheduled send whose stack shares its caller's frame with the all_reduce.
// `version` is one of "2.2", "2.4", "2.7", "2.10".
PickleValue SampleDumpTree(const std::string& version);
FrDump SampleDump(const std::string& version);

}  // namespace ncclscope::flight_recorder::testing
