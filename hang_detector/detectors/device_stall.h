// Localizing a device stall with the profiler plugin's device_start markers: when every member
// issued collective #N and none completed it, the members whose device work for #N started are
// waiting for the others, and a member whose work never started (its stream is blocked before it)
// is the culprit. Without markers nothing is decided here and the stall stays a tie.
#pragma once

#include <cstdint>
#include <vector>

#include "hang_detector/detectors/detectors.h"

namespace ncclscope::hang_detector {

// `waiting_files`: every member that issued #seq and has not completed it.
// When the markers split them into started and not started, and every member counted as "not
// started" provably had the profiler watching this communicator (an attach record or an earlier
// start marker, and no start it could not attribute), rewrites v's culprits (not started),
// victims (started), tie (false), summary and evidence and returns true. Otherwise leaves v alone
// and returns false. Thread-safe (reads the index only).
bool LocalizeDeviceStall(const Context& ctx, const CommModel& comm, uint64_t seq,
                         const std::vector<uint32_t>& waiting_files, Verdict* v);

}  // namespace ncclscope::hang_detector
