// Internal to the correlator: its own steps around the detectors (detectors/detectors.h), in the
// order Analyze (correlator.cpp) runs them. Each takes the look's Context; none keeps state.
#pragma once

#include <vector>

#include "hang_detector/detectors/detectors.h"
#include "hang_detector/verdicts/verdict.h"

namespace ncclscope::hang_detector {

// Sets ctx->live, ref_wall and post_mortem from heartbeats, flags and the process probe.
void AssessLiveness(Context* ctx);

// Turns verdicts whose culprits are dead or frozen into dead/frozen ones, and reports dead or
// frozen ranks no verdict names. After the detectors, before merging.
void ApplyLiveness(const Context& ctx, std::vector<Verdict>* verdicts);

// Stage two: marks each hang-class verdict confirmed or a suspect (with the wait that would
// confirm it) and says what its culprits are doing; confirmed hangs move first. The last step.
void ConfirmHangs(const Context& ctx, std::vector<Verdict>* verdicts);

}  // namespace ncclscope::hang_detector
