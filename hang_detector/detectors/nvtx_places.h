// Internal to the correlator: which training step and phase (the NVTX context the records carry,
// docs/nvtx.md) the operations a verdict is about were called in, as Verdict::where.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hang_detector/detectors/detectors.h"
#include "hang_detector/detectors/straggler_scores.h"

namespace ncclscope::hang_detector {

// The calls one rank contributes to a place, and what they are (Place::basis).
struct PlaceCalls {
  int rank = -1;
  uint32_t file = 0;
  std::vector<uint32_t> pos;
  std::string basis;
};

// Groups the ranks of one role by the place their calls were made in (for several calls: the
// (phase, innermost range) most of them share, with the steps those span) and appends the
// places to v->where, most ranks first, at most Verdict::kMaxPlaces. A rank whose calls carry no
// NVTX context adds nothing. Reads the index only.
void AddPlaces(const JobIndex& index, const std::string& role, const std::vector<PlaceCalls>& calls,
               Verdict* v);

// Fills `where` of every verdict that has none yet: for each culprit its call of the verdict's
// operation, else its newest collective or send/recv; for each victim its call of the verdict's
// operation, else the one it waits in, else its newest. Stragglers have theirs from the
// collectives they are flagged in (AddTimelinePlaces). Reads the index only.
void LocatePlaces(const Context& ctx, std::vector<Verdict>* verdicts);

// A straggler's place: the phase of the collectives of t flagged (flagged[i]: sample i of t, in
// the scoring window) for the culprits (members of t, by position), each with the basis
// "<flagged_as> N of the M collectives #a..#b on <comm>", and its victims' in the same collectives.
void AddTimelinePlaces(const Context& ctx, const CommTimeline& t, const std::vector<bool>& flagged,
                       const std::vector<size_t>& culprits, const std::string& flagged_as,
                       Verdict* v);

// A compute straggler's place: the collectives of t it arrives late to (late[i]: sample i of t).
void AddStragglerPlaces(const Context& ctx, const CommTimeline& t, const std::vector<bool>& late,
                        size_t culprit, Verdict* v);

}  // namespace ncclscope::hang_detector
